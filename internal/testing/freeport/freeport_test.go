package freeport

import "testing"

// TestNeverTwice: the ports handed out in one process are distinct, even
// when the kernel would give one back again once its listener closed.
func TestNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
