package idgen

import (
	"math/bits"
	"time"
)

// DefaultEpoch is the epoch of a Layout that leaves Epoch zero.
var DefaultEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Defaults of a Layout's zero fields.
const (
	DefaultUnit         = time.Millisecond
	DefaultSequenceBits = 12
)

// Layout is the bit layout of a Snowflake ID, from the high bits down:
//
//	0 | timestamp (units since Epoch) | worker (the slot) | sequence
//
// The sign bit stays 0, so IDs are positive int64 values that grow with
// time. Zero fields take defaults (see Resolve); with a namespace of up to
// 1024 slots the defaults are 41 timestamp bits of 1ms (about 69 years from
// 2024-01-01 UTC), 10 worker bits and 12 sequence bits: 4096 IDs per
// millisecond per worker.
type Layout struct {
	Epoch         time.Time     // zero: DefaultEpoch; used to whole milliseconds
	Unit          time.Duration // zero: DefaultUnit; a whole number of milliseconds
	TimestampBits int           // zero: what is left of the 63 bits
	WorkerBits    int           // zero: just enough for the namespace's limit
	SequenceBits  int           // zero: DefaultSequenceBits
}

// Resolve fills the zero fields for a namespace of limit slots and checks
// the result: the worker bits must hold every slot, and the three fields
// must fit 63 bits. Decode and Time need a resolved layout.
func (l Layout) Resolve(limit int) (Layout, error) {
	if limit < 1 {
		return l, invalid("namespace limit %d is less than 1", limit)
	}
	if l.Epoch.IsZero() {
		l.Epoch = DefaultEpoch
	}
	if l.Unit == 0 {
		l.Unit = DefaultUnit
	}
	if l.WorkerBits == 0 {
		l.WorkerBits = bits.Len(uint(limit - 1))
	}
	if l.SequenceBits == 0 {
		l.SequenceBits = DefaultSequenceBits
	}
	if l.TimestampBits == 0 {
		l.TimestampBits = 63 - l.WorkerBits - l.SequenceBits
	}
	switch {
	case l.Unit < time.Millisecond || l.Unit%time.Millisecond != 0 || l.Unit > 24*time.Hour:
		// Lease times are whole milliseconds, so a unit must map onto them exactly.
		return l, invalid("layout unit %v is not a whole number of milliseconds in [1ms, 24h]", l.Unit)
	case l.WorkerBits < 0 || l.SequenceBits < 0 || l.TimestampBits < 1:
		return l, invalid("layout bits %d/%d/%d (timestamp/worker/sequence) must not be negative, and timestamp bits at least 1",
			l.TimestampBits, l.WorkerBits, l.SequenceBits)
	case l.TimestampBits+l.WorkerBits+l.SequenceBits > 63:
		return l, invalid("layout bits %d+%d+%d (timestamp+worker+sequence) exceed 63",
			l.TimestampBits, l.WorkerBits, l.SequenceBits)
	case int64(limit) > int64(1)<<l.WorkerBits:
		return l, invalid("%d worker bits hold %d workers, fewer than the namespace's %d slots",
			l.WorkerBits, int64(1)<<l.WorkerBits, limit)
	}
	return l, nil
}

// Decode splits an ID of this (resolved) layout into its timestamp (in
// units since Epoch), worker ID and sequence number.
func (l Layout) Decode(id int64) (timestamp int64, worker int, seq int64) {
	seq = id & (1<<l.SequenceBits - 1)
	worker = int(id >> l.SequenceBits & (1<<l.WorkerBits - 1))
	timestamp = id >> (l.SequenceBits + l.WorkerBits)
	return timestamp, worker, seq
}

// Time returns the start of a timestamp's unit as a time.
func (l Layout) Time(timestamp int64) time.Time {
	return time.UnixMilli(l.Epoch.UnixMilli() + timestamp*l.Unit.Milliseconds())
}

// encode builds an ID; the caller keeps each part within its bits.
func (l Layout) encode(timestamp int64, worker int, seq int64) int64 {
	return timestamp<<(l.SequenceBits+l.WorkerBits) | int64(worker)<<l.SequenceBits | seq
}
