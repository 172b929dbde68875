package eventrec

import "testing"

func TestInOrder(t *testing.T) {
	for _, c := range []struct {
		got, want []string
		ok        bool
	}{
		{[]string{"c", "d", "c"}, []string{"c", "d", "c"}, true},
		{[]string{"c", "d", "d", "x", "e", "d", "c"}, []string{"c", "d", "c"}, true}, // repeats and others between
		{[]string{"c", "d"}, []string{"c", "d", "c"}, false},
		{[]string{"d", "c"}, []string{"c", "d"}, false}, // out of order
		{nil, nil, true},
	} {
		if got := InOrder(c.got, c.want...); got != c.ok {
			t.Errorf("InOrder(%q, %q) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
}
