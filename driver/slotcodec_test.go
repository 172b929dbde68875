package driver

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// version1 is a record as version 1 of the encoding writes it, kept as
// bytes: every later release must still read it as v1Record.
const version1 = "0106686f73742d61043966336306686f73742d620ec0a907d00f80b8d9a5db66c0e1e0a5db6690f1e0a5db6680b8d9a5db66a4cbd9a5db66"

var v1Record = SlotRecord{Owner: "host-a", Incarnation: "9f3c", LastOwner: "host-b", Fence: 7, TTL: 60000, Tolerance: 1000,
	Floor: 1764600000000, ExpiresMin: 1764600060000, CeilingMin: 1764600061000, NextFloor: 1764600000000, Written: 1764600001234}

func TestSlotRecordReadsVersion1(t *testing.T) {
	data, err := hex.DecodeString(version1)
	if err != nil {
		t.Fatal(err)
	}
	var r SlotRecord
	if err := r.UnmarshalBinary(data); err != nil {
		t.Fatalf("UnmarshalBinary of a version 1 record: %v", err)
	}
	if d := cmp.Diff(v1Record, r); d != "" {
		t.Errorf("version 1 record: -want +got:\n%s", d)
	}
}

// TestSlotRecordFields: a field added to SlotRecord must come with a new
// version of the encoding (and this count raised with it).
func TestSlotRecordFields(t *testing.T) {
	if n := reflect.TypeFor[SlotRecord]().NumField(); n != 11 {
		t.Errorf("SlotRecord has %d fields, the encoding version %d knows 11: add a version to MarshalBinary and UnmarshalBinary", n, SlotRecordVersion)
	}
}

func TestSlotRecordRoundTrip(t *testing.T) {
	for _, r := range []SlotRecord{{}, v1Record, {Fence: -1, Floor: -1 << 63, Written: 1<<63 - 1}} {
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got SlotRecord
		if err := got.UnmarshalBinary(b); err != nil || got != r {
			t.Errorf("round trip of %+v: %+v, %v", r, got, err)
		}
	}
}

func TestSlotRecordCorrupt(t *testing.T) {
	good, _ := v1Record.MarshalBinary()
	noInc := SlotRecord{Owner: "a"}
	ownerOnly, _ := noInc.MarshalBinary()
	for name, data := range map[string][]byte{
		"empty":                 nil,
		"unknown version":       append([]byte{2}, good[1:]...),
		"version 0":             append([]byte{0}, good[1:]...),
		"truncated":             good[:len(good)-1],
		"truncated in a string": good[:4],
		"a byte after":          append(append([]byte{}, good...), 0),
		"owner, no incarnation": ownerOnly,
		"string past the end":   {1, 0x7f, 'a'},
	} {
		r := v1Record
		err := r.UnmarshalBinary(data)
		if !errors.Is(err, ErrCorrupt) || r != v1Record {
			t.Errorf("%s: %v, record %+v; want ErrCorrupt and the record unchanged", name, err, r)
		}
	}
}

func FuzzSlotRecord(f *testing.F) {
	good, _ := v1Record.MarshalBinary()
	f.Add(good)
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var r SlotRecord
		if err := r.UnmarshalBinary(data); err != nil {
			return
		}
		again, _ := r.MarshalBinary()
		var r2 SlotRecord
		if err := r2.UnmarshalBinary(again); err != nil || r2 != r {
			t.Errorf("%x read as %+v, which encodes to %x that reads as %+v, %v", data, r, again, r2, err)
		}
	})
}
