package etcd

import (
	"context"
	"fmt"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// Two stores overlap when one's prefix lies in a subtree of the other's
// layout: a store at P/range has the keys P/range/range/k, which the store
// at P reads as its range key range/k (the inner store's Purge would
// delete it, and a fresh process of the outer store would hand out its
// values again); one at P/lock/n puts its keys among lock n's waiters (the
// lock stays taken). Such a store is refused, whichever comes first: at
// Open when the outer store exists (checkNested), at the creation of the
// outer one when the inner one's keys are there (storeID, nestCmps), and
// the creation's transaction compares both, so two stores created at once
// cannot both succeed. A prefix beside the layout (P/x) shares no key.

// layoutDirs are the first segments under a prefix whose subtrees hold a
// store's keys (meta and purged are single keys: P/meta/x is none of
// them).
var layoutDirs = []string{"layout", "lock", "ns", "owner", "range", "slot"}

func isLayoutDir(seg string) bool {
	for _, d := range layoutDirs {
		if d == seg {
			return true
		}
	}
	return false
}

// outerMetas are the metadata keys of the stores whose layout this prefix
// would lie in: P/meta for each ancestor P followed by a layout segment.
// Usually there is none.
func (s *etcdStore) outerMetas() []string {
	segs := strings.Split(s.cfg.prefix[1:], "/")
	var metas []string
	for i := 1; i < len(segs); i++ {
		if isLayoutDir(segs[i]) {
			metas = append(metas, "/"+strings.Join(segs[:i], "/")+"/meta")
		}
	}
	return metas
}

// checkNested refuses a prefix inside another store's layout, naming that
// store's metadata key; it reads only outerMetas, in one transaction.
func (s *etcdStore) checkNested(ctx context.Context) error {
	metas := s.outerMetas()
	if len(metas) == 0 {
		return nil
	}
	var ops []clientv3.Op
	for _, k := range metas {
		ops = append(ops, clientv3.OpGet(k, clientv3.WithKeysOnly()))
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err = s.check(ctx, err); err != nil {
		return err
	}
	for i, r := range resp.Responses {
		if len(r.GetResponseRange().Kvs) > 0 {
			return s.outerErr(metas[i])
		}
	}
	return nil
}

func (s *etcdStore) outerErr(meta string) error {
	return fmt.Errorf("prefix %s lies among the keys of the store whose metadata key is %s: %w",
		s.cfg.prefix, meta, driver.ErrConfigMismatch)
}

// outerCmps hold while no store exists whose layout this prefix lies in:
// a purge or a creation compares them, so neither goes through beside a
// store created after checkNested read.
func (s *etcdStore) outerCmps() []clientv3.Cmp {
	var cmps []clientv3.Cmp
	for _, k := range s.outerMetas() {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
	}
	return cmps
}

// nestCmps are the compares of a store's creation: no outer store, and no
// key in this prefix's layout subtrees (another store nested there); and
// the reads that tell which failed, for nestRefusal.
func (s *etcdStore) nestCmps() ([]clientv3.Cmp, []clientv3.Op) {
	cmps := s.outerCmps()
	var found []clientv3.Op
	for _, k := range s.outerMetas() {
		found = append(found, clientv3.OpGet(k, clientv3.WithKeysOnly()))
	}
	for _, dir := range layoutDirs {
		p := s.key(dir) + "/"
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(p), "=", 0).WithPrefix())
		found = append(found, clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1)))
	}
	return cmps, found
}

// nestRefusal is the error of a creation whose nestCmps failed (resps:
// the answers of their reads), naming the other store; nil if none
// failed (the transaction lost to the metadata key's creation).
func (s *etcdStore) nestRefusal(ctx context.Context, resps []*pb.ResponseOp) error {
	metas := s.outerMetas()
	for i, r := range resps {
		kvs := r.GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue
		}
		if i < len(metas) {
			return s.outerErr(metas[i])
		}
		inner := s.innerMeta(ctx, layoutDirs[i-len(metas)])
		if inner != "" {
			return fmt.Errorf("no store at %s, and the store whose metadata key is %s lies among its keys: %w",
				s.cfg.prefix, inner, driver.ErrConfigMismatch)
		}
		return fmt.Errorf("no store at %s, but key %s lies among its keys (another store nested there?): %w",
			s.cfg.prefix, kvs[0].Key, driver.ErrConfigMismatch)
	}
	return nil
}

// innerMeta finds the metadata key of a store nested in the layout
// subtree dir, reading at most its first 10000 keys ("" when none there).
func (s *etcdStore) innerMeta(ctx context.Context, dir string) string {
	resp, err := s.cli.Get(ctx, s.key(dir)+"/", clientv3.WithPrefix(), clientv3.WithLimit(10000))
	if s.check(ctx, err) != nil {
		return ""
	}
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "/meta") && strings.HasPrefix(string(kv.Value), "id=") {
			return string(kv.Key)
		}
	}
	return ""
}
