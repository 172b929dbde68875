package zookeeper

import (
	"errors"
	"strconv"
)

// A range node holds the key's next value as decimal text, with ":sealed"
// appended once the key is sealed: "1200", "1200:sealed". People write
// these nodes by hand (migrations, repairs), so the format stays plain text
// and the parser accepts exactly what formatRange writes, plus leading
// zeros, which are unambiguous.

const sealedSuffix = ":sealed"

// formatRange encodes a range node's data.
func formatRange(next int64, sealed bool) []byte {
	b := strconv.AppendInt(make([]byte, 0, 20+len(sealedSuffix)), next, 10)
	if sealed {
		b = append(b, sealedSuffix...)
	}
	return b
}

var errRangeSyntax = errors.New(`want a non-negative decimal number, optionally followed by ":sealed"`)

// parseRange decodes a range node's data. Empty data is not an error: it is
// a parent node created for a longer key ("a" for "a/b"), which holds no
// value yet; empty reports it.
func parseRange(data []byte) (next int64, sealed, empty bool, err error) {
	if len(data) == 0 {
		return 0, false, true, nil
	}
	s := string(data)
	if n := len(s) - len(sealedSuffix); n >= 0 && s[n:] == sealedSuffix {
		s, sealed = s[:n], true
	}
	if s == "" {
		return 0, false, false, errRangeSyntax
	}
	for i := 0; i < len(s); i++ {
		// ParseInt alone would accept a sign.
		if s[i] < '0' || s[i] > '9' {
			return 0, false, false, errRangeSyntax
		}
	}
	next, err = strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, false, errors.New("value is larger than the largest int64")
	}
	return next, sealed, false, nil
}
