package etcd

import (
	"fmt"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// A slot key deleted by hand looks like a slot never used: another store
// would start it again at the fence floor and floor 0, under a term that
// may still issue. So each namespace keeps a tally of the slot keys ever
// created in it: the key slot/{ns} (beside its slots' subtree slot/{ns}/),
// put in the transaction that creates a slot key. Its version counts those
// puts; its value, "base=N", the slot keys an older driver had created
// before the tally existed. Fewer slot keys than base + version means one
// was deleted: a missing slot is then not taken (nor seeded), as nothing
// tells which one went and with what fence and ceiling. A purge deletes
// the tally with the slots. A slot key an older driver creates is not
// counted (more keys than the tally is no hole).

func (s *slotStore) tallyKey(ns string) string { return s.key("slot", ns) }

// tally is what a read of a namespace found of its slot keys: how many
// exist and what the tally says were created.
type tally struct {
	count   int64 // slot keys under slot/{ns}/
	base    int64 // from the tally's value
	version int64 // the tally's version (0: no tally yet)
}

// tallyOps read the count of ns's slot keys (one key, with the count of
// all) and its tally, for a transaction that reads slots.
func (s *slotStore) tallyOps(ns string) []clientv3.Op {
	return []clientv3.Op{
		clientv3.OpGet(s.key("slot", ns)+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1)),
		clientv3.OpGet(s.tallyKey(ns)),
	}
}

// parseTally reads the answers of tallyOps.
func (s *slotStore) parseTally(slots, t *pb.RangeResponse) (tally, error) {
	return s.tallyFrom(slots.Count, t.Kvs)
}

func (s *slotStore) tallyFrom(count int64, kvs []*mvccpb.KeyValue) (tally, error) {
	tl := tally{count: count, base: count}
	if len(kvs) == 0 {
		return tl, nil
	}
	v, ok := strings.CutPrefix(string(kvs[0].Value), "base=")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
		return tally{}, fmt.Errorf("slot tally %s holds %q: %w", kvs[0].Key, kvs[0].Value, driver.ErrCorrupt)
	}
	tl.base, tl.version = n, kvs[0].Version
	return tl, nil
}

// hole is the error of a missing slot of namespace ns when slot keys were
// deleted, nil otherwise.
func (t tally) hole(ns string) error {
	if t.version == 0 || t.count >= t.base+t.version {
		return nil
	}
	return fmt.Errorf("namespace %q has %d slot keys of the %d created (a slot key deleted by hand?): a missing slot is not taken, "+
		"its fence and ceiling being lost; restore the key, or purge the store: %w", ns, t.count, t.base+t.version, driver.ErrCorrupt)
}

// bump is the put that counts a slot key's creation, in the creating
// transaction.
func (s *slotStore) bump(ns string, t tally) clientv3.Op {
	return clientv3.OpPut(s.tallyKey(ns), "base="+strconv.FormatInt(t.base, 10))
}

// missing is a slot found missing by a read at rev: never stored, unless
// slot keys were deleted (then not to be taken).
func (a *acquisition) missing(rev int64) slotState {
	if a.hole != nil {
		return slotState{err: a.hole, hole: true}
	}
	return withRev(slotFrom("", nil, a.floor), rev)
}

// learnTally takes in a read's tally (slot_tally.go).
func (a *acquisition) learnTally(slots, t *pb.RangeResponse) error {
	tl, err := a.s.parseTally(slots, t)
	if err != nil {
		return err
	}
	a.tally, a.hole = tl, tl.hole(a.req.Namespace.Name)
	return nil
}
