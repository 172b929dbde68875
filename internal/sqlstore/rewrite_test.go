package sqlstore

import (
	"strings"
	"testing"
)

// A marker inside what the rewrite puts in (a schema name in the prefix)
// is left as it is: the text is replaced in one pass.
func TestRewriteOnePass(t *testing.T) {
	d := Dialect{Prefix: `"s{now}{forupdate}{skiplocked}{p}{lock}".`, Now: "NOW()", ForUpdate: " FU", SkipLocked: " SL"}
	s := &Store{d: d, markers: markersOf(d)}
	got := s.Q("SELECT {now} FROM {p}t{forupdate}")
	if want := `SELECT NOW() FROM "s{now}{forupdate}{skiplocked}{p}{lock}".t FU`; got != want {
		t.Errorf("Q = %s, want %s", got, want)
	}
	free := s.rewrite(strings.ReplaceAll(statements["slot.free"], "{lock}", " L"))
	if !strings.Contains(free, `FROM "s{now}{forupdate}{skiplocked}{p}{lock}".cosid_slot`) || !strings.HasSuffix(free, "LIMIT 1 L") {
		t.Errorf("slot.free rewritten: %s", free)
	}
}
