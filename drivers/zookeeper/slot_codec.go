package zookeeper

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Slot nodes and namespace nodes hold name=value lines, one per line:
//
//	owner=host-a
//	incarnation=5f3a...
//	last_owner=
//	fence=7
//	...
//
// People read and, in a restore, write these nodes by hand, so the format is
// plain text. Parsing is strict where a wrong value could break a lease's
// safety (every known name must be present exactly once; numbers are plain
// non-negative decimals) and lenient where it cannot (blank lines, the order
// of the lines, names this version does not know, which are kept as they
// are when the node is rewritten).

// The names of a slot node, in the order they are written.
const (
	fieldOwner       = "owner"
	fieldIncarnation = "incarnation"
	fieldLastOwner   = "last_owner"
	fieldFence       = "fence"
	fieldTTL         = "ttl"
	fieldTolerance   = "tolerance"
	fieldFloor       = "floor"
	fieldExpiresMin  = "expires_min"
	fieldCeilingMin  = "ceiling_min"
	fieldNextFloor   = "next_floor"

	fieldLimit  = "limit"  // a namespace node's; it also has tolerance
	fieldSealed = "sealed" // a namespace node's: "true" once sealed (SealNamespace); absent is unsealed

	// The highest slot fence a purge deleted: a line of the root node,
	// copied into each namespace node created afterwards. The slots of that
	// namespace start above it, so no fence repeats across a purge.
	fieldSlotFenceFloor = "slot_fence_floor" // the root's
	fieldFenceFloor     = "fence_floor"      // a namespace's; absent is 0
)

// slotNode is the data of a slot node. Durations and times are milliseconds.
type slotNode struct {
	owner       string // empty when the slot is free
	incarnation string
	lastOwner   string
	fence       int64
	ttl         int64
	tolerance   int64
	floor       int64
	expiresMin  int64
	ceilingMin  int64
	nextFloor   int64
	extra       []nodeLine // names this version does not know, in their order
}

// nodeLine is one name=value line.
type nodeLine struct{ name, value string }

// record is the node as the slot record whose rules package driver keeps;
// mtime, the time of the node's last write, is the record's Written.
func (n slotNode) record(mtime int64) driver.SlotRecord {
	return driver.SlotRecord{
		Owner: n.owner, Incarnation: n.incarnation, LastOwner: n.lastOwner, Fence: n.fence,
		TTL: n.ttl, Tolerance: n.tolerance, Floor: n.floor, ExpiresMin: n.expiresMin,
		CeilingMin: n.ceilingMin, NextFloor: n.nextFloor, Written: mtime,
	}
}

// withRecord is the node holding r (its Written becomes the mtime of the
// write), with n's unknown lines kept.
func (n slotNode) withRecord(r driver.SlotRecord) slotNode {
	return slotNode{
		owner: r.Owner, incarnation: r.Incarnation, lastOwner: r.LastOwner, fence: r.Fence,
		ttl: r.TTL, tolerance: r.Tolerance, floor: r.Floor, expiresMin: r.ExpiresMin,
		ceilingMin: r.CeilingMin, nextFloor: r.NextFloor, extra: n.extra,
	}
}

// formatSlot encodes a slot node's data.
func formatSlot(n slotNode) []byte {
	b := make([]byte, 0, 192)
	line := func(name, value string) {
		b = append(b, name...)
		b = append(b, '=')
		b = append(b, value...)
		b = append(b, '\n')
	}
	num := func(name string, v int64) {
		b = append(b, name...)
		b = append(b, '=')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}
	line(fieldOwner, n.owner)
	line(fieldIncarnation, n.incarnation)
	line(fieldLastOwner, n.lastOwner)
	num(fieldFence, n.fence)
	num(fieldTTL, n.ttl)
	num(fieldTolerance, n.tolerance)
	num(fieldFloor, n.floor)
	num(fieldExpiresMin, n.expiresMin)
	num(fieldCeilingMin, n.ceilingMin)
	num(fieldNextFloor, n.nextFloor)
	for _, f := range n.extra {
		line(f.name, f.value)
	}
	return b
}

// parseSlot decodes a slot node's data. The error says what is wrong, for
// a message that also names the path.
func parseSlot(data []byte) (slotNode, error) {
	nodeLines, err := parseNodeLines(data)
	if err != nil {
		return slotNode{}, err
	}
	var n slotNode
	strs := []struct {
		name string
		v    *string
	}{{fieldOwner, &n.owner}, {fieldIncarnation, &n.incarnation}, {fieldLastOwner, &n.lastOwner}}
	nums := []struct {
		name string
		v    *int64
	}{
		{fieldFence, &n.fence}, {fieldTTL, &n.ttl}, {fieldTolerance, &n.tolerance}, {fieldFloor, &n.floor},
		{fieldExpiresMin, &n.expiresMin}, {fieldCeilingMin, &n.ceilingMin}, {fieldNextFloor, &n.nextFloor},
	}
	known := make(map[string]bool, len(strs)+len(nums))
	for _, s := range strs {
		known[s.name] = true
		v, ok := nodeLines.get(s.name)
		if !ok {
			return slotNode{}, fmt.Errorf("no %q line", s.name)
		}
		if err := checkLineText(s.name, v); err != nil {
			return slotNode{}, err
		}
		*s.v = v
	}
	for _, x := range nums {
		known[x.name] = true
		v, ok := nodeLines.get(x.name)
		if !ok {
			return slotNode{}, fmt.Errorf("no %q line", x.name)
		}
		if *x.v, err = parseDecimal(x.name, v); err != nil {
			return slotNode{}, err
		}
	}
	for _, f := range nodeLines {
		if !known[f.name] {
			n.extra = append(n.extra, f)
		}
	}
	switch {
	case n.ttl > store.MaxTTL.Milliseconds():
		return slotNode{}, fmt.Errorf("ttl %dms is above the largest, %dms", n.ttl, store.MaxTTL.Milliseconds())
	case n.tolerance > store.MaxTolerance.Milliseconds():
		return slotNode{}, fmt.Errorf("tolerance %dms is above the largest, %dms", n.tolerance, store.MaxTolerance.Milliseconds())
	case n.owner == "" && n.incarnation != "":
		return slotNode{}, errors.New("an incarnation without an owner")
	case n.owner != "" && n.incarnation == "":
		return slotNode{}, errors.New("an owner without an incarnation")
	case n.owner != "" && (n.fence < 1 || n.ttl < 1):
		return slotNode{}, fmt.Errorf("a term with fence %d and ttl %d (both must be at least 1)", n.fence, n.ttl)
	}
	return n, nil
}

// formatNamespace encodes a namespace node's settings.
func formatNamespace(limit int, toleranceMillis int64) []byte {
	return fmt.Appendf(nil, "%s=%d\n%s=%d\n", fieldLimit, limit, fieldTolerance, toleranceMillis)
}

// sealedLine is what SealNamespace appends to a namespace node.
var sealedLine = fieldSealed + "=true\n"

// parseNamespace decodes a namespace node's settings and seal; other names
// are allowed and ignored (the node is rewritten only by a seal, which
// keeps every line). A limit of 0 is a namespace SealNamespace created.
func parseNamespace(data []byte) (limit int, toleranceMillis int64, sealed bool, err error) {
	nodeLines, err := parseNodeLines(data)
	if err != nil {
		return 0, 0, false, err
	}
	switch v, ok := nodeLines.get(fieldSealed); {
	case !ok:
	case v == "true":
		sealed = true
	default:
		return 0, 0, false, fmt.Errorf("%s %q is not true", fieldSealed, v)
	}
	get := func(name string, max int64) (int64, error) {
		v, ok := nodeLines.get(name)
		if !ok {
			return 0, fmt.Errorf("no %q line", name)
		}
		n, err := parseDecimal(name, v)
		if err == nil && n > max {
			err = fmt.Errorf("%s %d is above the largest, %d", name, n, max)
		}
		return n, err
	}
	l, err := get(fieldLimit, store.MaxSlots)
	if err != nil {
		return 0, 0, false, err
	}
	if l < 1 && !(l == 0 && sealed) {
		return 0, 0, false, fmt.Errorf("%s %d is below 1", fieldLimit, l)
	}
	tol, err := get(fieldTolerance, store.MaxTolerance.Milliseconds())
	if err != nil {
		return 0, 0, false, err
	}
	return int(l), tol, sealed, nil
}

// nodeLines are the lines of a node, in their order.
type nodeLines []nodeLine

func (fs nodeLines) get(name string) (string, bool) {
	for _, f := range fs {
		if f.name == name {
			return f.value, true
		}
	}
	return "", false
}

// parseNodeLines splits data into name=value lines. Blank lines are skipped; a
// name may appear only once, so that a reader never has to guess which of
// two values counts. A value runs to the end of its line and may hold '='.
func parseNodeLines(data []byte) (nodeLines, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	var out nodeLines
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d has no '='", i+1)
		}
		if !validLineName(name) {
			return nil, fmt.Errorf("line %d: %q is not a name (letters, digits, '_', '.', '-')", i+1, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("%q appears twice", name)
		}
		seen[name] = true
		out = append(out, nodeLine{name, value})
	}
	return out, nil
}

func validLineName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// checkLineText refuses control characters in owner and incarnation values,
// which the store never writes (the portable layer refuses them).
func checkLineText(name, v string) error {
	for _, r := range v {
		if r < 0x20 || r == 0x7F {
			return fmt.Errorf("%s %q contains the control character %U", name, v, r)
		}
	}
	return nil
}

// parseDecimal reads a non-negative decimal int64. Leading zeros are
// unambiguous and allowed; signs, spaces and other bases are not.
func parseDecimal(name, v string) (int64, error) {
	if v == "" {
		return 0, fmt.Errorf("%s is empty", name)
	}
	for i := 0; i < len(v); i++ {
		// ParseInt alone would accept a sign.
		if v[i] < '0' || v[i] > '9' {
			return 0, fmt.Errorf("%s %q is not a non-negative decimal number", name, v)
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is larger than the largest int64", name, v)
	}
	return n, nil
}

// formatOwnerIndex encodes an owner's last slots, most recent first.
func formatOwnerIndex(slots []int) []byte {
	b := make([]byte, 0, 8*len(slots))
	for i, n := range slots {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return b
}

// parseOwnerIndex decodes an owner index: slot numbers, comma separated.
// Repeats are dropped, keeping the first; the list is a hint, so a longer
// list than the store writes is read, and shortened on the next write.
func parseOwnerIndex(data []byte) ([]int, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var out []int
	for _, item := range strings.Split(string(data), ",") {
		n, err := parseDecimal("slot", item)
		if err != nil {
			return nil, err
		}
		if n >= store.MaxSlots {
			return nil, fmt.Errorf("slot %d is above the largest, %d", n, store.MaxSlots-1)
		}
		if !slices.Contains(out, int(n)) {
			out = append(out, int(n))
		}
	}
	return out, nil
}

// parseFenceFloor reads the optional fence floor line name of a root or
// namespace node; a node without it has floor 0.
func parseFenceFloor(data []byte, name string) (int64, error) {
	lines, err := parseNodeLines(data)
	if err != nil {
		return 0, err
	}
	v, ok := lines.get(name)
	if !ok {
		return 0, nil
	}
	return parseDecimal(name, v)
}

// withLine returns data with line name set to value (replaced, or added
// at the end), the other lines kept in their order.
func withLine(data []byte, name, value string) ([]byte, error) {
	lines, err := parseNodeLines(data)
	if err != nil {
		return nil, err
	}
	var out []byte
	found := false
	for _, l := range lines {
		if l.name == name {
			l.value, found = value, true
		}
		out = fmt.Appendf(out, "%s=%s\n", l.name, l.value)
	}
	if !found {
		out = fmt.Appendf(out, "%s=%s\n", name, value)
	}
	return out, nil
}
