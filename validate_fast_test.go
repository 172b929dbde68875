package store

import (
	"fmt"
	"testing"
)

// TestCheckKeyFastPath: checkKey's one-pass path agrees with the full
// checks on every string of up to 5 bytes over an alphabet of the bytes
// they tell apart ('/', '.', a letter, the space, a control byte, DEL and
// a byte of a multi-byte character), and the fast path is the one taken
// for keys it accepts.
func TestCheckKeyFastPath(t *testing.T) {
	alphabet := []byte{'/', '.', 'a', ' ', '\x01', '\x7f', '\xc3'}
	var walk func(prefix []byte)
	n, fast := 0, 0
	walk = func(prefix []byte) {
		key := string(prefix)
		got, want := checkKey("key", key), checkKeyFully("key", key)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("checkKey(%q) = %v, the full checks say %v", key, got, want)
		}
		if plainPath(key) {
			fast++
			if want != nil {
				t.Errorf("plainPath(%q) accepts a key the full checks refuse: %v", key, want)
			}
		}
		n++
		if len(prefix) == 5 {
			return
		}
		for _, c := range alphabet {
			walk(append(prefix, c))
		}
	}
	walk(nil)
	if fast == 0 || fast == n {
		t.Fatalf("the fast path took %d of %d keys: the alphabet does not exercise both paths", fast, n)
	}
}
