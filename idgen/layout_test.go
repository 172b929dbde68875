package idgen_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

func TestLayoutResolve(t *testing.T) {
	for _, tc := range []struct {
		limit int
		in    idgen.Layout
		want  idgen.Layout
	}{
		{1024, idgen.Layout{}, idgen.Layout{Epoch: idgen.DefaultEpoch, Unit: time.Millisecond, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12}},
		{1, idgen.Layout{}, idgen.Layout{Epoch: idgen.DefaultEpoch, Unit: time.Millisecond, TimestampBits: 51, WorkerBits: 0, SequenceBits: 12}},
		{1025, idgen.Layout{}, idgen.Layout{Epoch: idgen.DefaultEpoch, Unit: time.Millisecond, TimestampBits: 40, WorkerBits: 11, SequenceBits: 12}},
		{256, idgen.Layout{Unit: 10 * time.Millisecond, SequenceBits: 8, TimestampBits: 39},
			idgen.Layout{Epoch: idgen.DefaultEpoch, Unit: 10 * time.Millisecond, TimestampBits: 39, WorkerBits: 8, SequenceBits: 8}},
	} {
		got, err := tc.in.Resolve(tc.limit)
		if err != nil {
			t.Errorf("Resolve(%d) of %+v: %v", tc.limit, tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("Resolve(%d) of %+v (-want +got):\n%s", tc.limit, tc.in, d)
		}
	}
	for _, tc := range []struct {
		limit int
		in    idgen.Layout
	}{
		{16, idgen.Layout{WorkerBits: 3}},
		{16, idgen.Layout{TimestampBits: 50, SequenceBits: 12}},
		{16, idgen.Layout{Unit: 1500 * time.Microsecond}},
		{16, idgen.Layout{Unit: time.Microsecond}},
		{16, idgen.Layout{SequenceBits: -1}},
		{0, idgen.Layout{}},
	} {
		if _, err := tc.in.Resolve(tc.limit); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Resolve(%d) of %+v: %v, want ErrInvalidArgument", tc.limit, tc.in, err)
		}
	}
}

func TestLayoutDecode(t *testing.T) {
	l, err := idgen.Layout{}.Resolve(1024)
	if err != nil {
		t.Fatal(err)
	}
	// 2024-01-01 plus 1234567ms, worker 1023, sequence 4095.
	id := int64(1234567)<<22 | 1023<<12 | 4095
	ts, w, seq := l.Decode(id)
	if ts != 1234567 || w != 1023 || seq != 4095 {
		t.Fatalf("Decode: %d %d %d", ts, w, seq)
	}
	if got, want := l.Time(ts), idgen.DefaultEpoch.Add(1234567*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Time: %v, want %v", got, want)
	}
}
