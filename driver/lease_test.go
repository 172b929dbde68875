package driver

import (
	"math"
	"testing"
)

func TestLeaseArithmetic(t *testing.T) {
	const max = math.MaxInt64
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"expiry from the write", TermExpiresAt(0, 1000, 60), 1060},
		{"expiry kept by its lower bound", TermExpiresAt(2000, 1000, 60), 2000},
		{"expiry saturates", TermExpiresAt(0, max-10, 60), max},
		{"ceiling from the expiry", TermCeiling(0, 1060, 5), 1065},
		{"ceiling kept by its lower bound", TermCeiling(3000, 1060, 5), 3000},
		{"ceiling saturates", TermCeiling(0, max, 5), max},
		{"released, used unknown", ReleasedFloor(-1, 100, 500), 500},
		{"released right above used", ReleasedFloor(200, 100, 500), 201},
		{"released used below floor", ReleasedFloor(50, 100, 500), 100},
		{"released used past ceiling", ReleasedFloor(900, 100, 500), 500},
		{"released used at the largest value", ReleasedFloor(max, 100, 500), 500},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, c.got, c.want)
		}
	}
}
