package zookeeper

import (
	"strings"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestListRangesDeepKeyPaged: a key 512 levels deep is 512 reads, one
// after the other, to reach. A page stops at its work budget with what it
// has (nothing: the deep key is the only one) and where it goes on; the
// pages that follow, each within the budget, list the key once. Listed in
// one page, the walk reads every level in one call, past the store's call
// bound on a loaded machine.
func TestListRangesDeepKeyPaged(t *testing.T) {
	w := &wire{}
	s := openTest(t, testOptions(zktest.StartServer(t, zktest.Versions()[0]).Addr(), nil), w)
	ctx := t.Context()
	deep := strings.Repeat("k/", store.MaxKeyLen/2-1) + "kk"
	if _, err := s.Next(ctx, deep, 1); err != nil {
		t.Fatal(err)
	}
	var listed []string
	pages, after := 0, ""
	for {
		reads := w.requests(opGetData)
		page, next, err := s.ListRanges(ctx, after, 1000)
		if err != nil {
			t.Fatalf("ListRanges(%q) after %d pages: %v", after, pages, err)
		}
		pages++
		if got := w.requests(opGetData) - reads; got > pageBudget {
			t.Errorf("page %d read %d nodes, past the budget of %d", pages, got, pageBudget)
		}
		for _, k := range page {
			listed = append(listed, k.Key)
		}
		if next == "" {
			break
		}
		if next <= after {
			t.Fatalf("page %d goes on at %q, not above %q", pages, next, after)
		}
		after = next
	}
	if len(listed) != 1 || listed[0] != deep {
		t.Errorf("listed %d keys (%.40q...), want the deep key once", len(listed), listed)
	}
	if pages < 2 || pages < 512/pageBudget {
		t.Errorf("the deep key was listed in %d pages: a page walked all its levels", pages)
	}
	t.Logf("%d pages", pages)
}
