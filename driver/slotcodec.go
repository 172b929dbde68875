package driver

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SlotRecordVersion is the version of the encoding MarshalBinary writes.
// UnmarshalBinary reads it and every earlier version.
const SlotRecordVersion = 1

// MarshalBinary encodes the record for a driver that stores it as one value
// (a key-value store, a blob column). The encoding is stable: its first byte
// is the version; version 1 follows with the strings Owner, Incarnation and
// LastOwner, each as a uvarint length and its bytes, then Fence, TTL,
// Tolerance, Floor, ExpiresMin, CeilingMin, NextFloor and Written as zig-zag
// varints (encoding/binary's AppendVarint), and nothing after them.
//
// A release that adds a field to SlotRecord writes a new version and still
// reads every older one, giving the new field the value that keeps the slot
// rules of the older release (written in the new version's comment here),
// so a driver's stored records never need rewriting: a record is written in
// the newest version the next time the driver stores it.
func (r SlotRecord) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 16+len(r.Owner)+len(r.Incarnation)+len(r.LastOwner)+8*binary.MaxVarintLen64)
	b = append(b, SlotRecordVersion)
	for _, s := range []string{r.Owner, r.Incarnation, r.LastOwner} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, v := range r.numbers() {
		b = binary.AppendVarint(b, *v)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote, in any version up to
// SlotRecordVersion. Data that is not such a record (empty, an unknown
// version, truncated, with bytes left over, a string that is not the
// owner's) gives an error wrapping ErrCorrupt, and r is not changed: a
// driver reports it and never repairs it by guessing.
func (r *SlotRecord) UnmarshalBinary(data []byte) error {
	n, err := decodeSlotRecord(data)
	if err != nil {
		return fmt.Errorf("slot record: %w: %w", err, ErrCorrupt)
	}
	*r = n
	return nil
}

var errTruncated = errors.New("truncated")

func decodeSlotRecord(data []byte) (SlotRecord, error) {
	if len(data) == 0 {
		return SlotRecord{}, errors.New("empty")
	}
	if v := data[0]; v != 1 {
		return SlotRecord{}, fmt.Errorf("version %d is not one this release reads (1 to %d)", v, SlotRecordVersion)
	}
	b := data[1:]
	var r SlotRecord
	for _, s := range []*string{&r.Owner, &r.Incarnation, &r.LastOwner} {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return SlotRecord{}, errTruncated
		}
		*s, b = string(b[k:k+int(n)]), b[k+int(n):]
	}
	for _, v := range r.numbers() {
		x, k := binary.Varint(b)
		if k <= 0 {
			return SlotRecord{}, errTruncated
		}
		*v, b = x, b[k:]
	}
	switch {
	case len(b) != 0:
		return SlotRecord{}, fmt.Errorf("%d bytes after the record", len(b))
	case (r.Owner == "") != (r.Incarnation == ""):
		return SlotRecord{}, fmt.Errorf("owner %q with incarnation %q: both or neither", r.Owner, r.Incarnation)
	}
	return r, nil
}

// numbers are the record's int64 fields in the encoding's order.
func (r *SlotRecord) numbers() []*int64 {
	return []*int64{&r.Fence, &r.TTL, &r.Tolerance, &r.Floor, &r.ExpiresMin, &r.CeilingMin, &r.NextFloor, &r.Written}
}
