package etcd

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cosid-go/store/driver"
)

// The operator's hooks of the TCK harness (tck.Snapshotter,
// tck.HandDeleter, tck.SessionEnder, tck.SlotCorrupter, ...), done as an
// operator would, with an etcd client of the operator's own.

// raw returns the operator's client, made at its first use and closed
// when the check ends.
// It speaks as the harness's stores do (TLS, a user): a plaintext client
// of a TLS member would never connect, and its calls have no deadline.
func (h *harness) raw() (*clientv3.Client, error) {
	h.rawOnce.Do(func() {
		cfg, err := parseOptions(h.options())
		if err != nil {
			h.rawErr = err
			return
		}
		h.rawCli, h.rawErr = clientv3.New(clientv3.Config{Endpoints: h.server().Endpoints(), Logger: zap.NewNop(),
			TLS: cfg.tls, Username: cfg.username, Password: cfg.password, DialTimeout: cfg.dialTimeout})
		if h.rawErr == nil {
			h.t.Cleanup(func() { h.rawCli.Close() })
		}
	})
	return h.rawCli, h.rawErr
}

// Snapshot reads every key under the prefix that hangs on no lease; the
// restore puts them back and deletes such keys made since, in one
// transaction, as a restore from a copy of the keys does
// (tck.Snapshotter). Keys on a lease (lock waiters) live and die with
// their sessions, and a copy does not bring them back.
func (h *harness) Snapshot(ctx context.Context) (func(context.Context) error, error) {
	cli, err := h.raw()
	if err != nil {
		return nil, err
	}
	resp, err := cli.Get(ctx, h.prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	kept := map[string][]byte{}
	for _, kv := range resp.Kvs {
		if kv.Lease == 0 {
			kept[string(kv.Key)] = kv.Value
		}
	}
	return func(ctx context.Context) error {
		now, err := cli.Get(ctx, h.prefix+"/", clientv3.WithPrefix())
		if err != nil {
			return err
		}
		var ops []clientv3.Op
		for _, kv := range now.Kvs {
			if _, ok := kept[string(kv.Key)]; !ok && kv.Lease == 0 {
				ops = append(ops, clientv3.OpDelete(string(kv.Key)))
			}
		}
		for k, v := range kept {
			ops = append(ops, clientv3.OpPut(k, string(v)))
		}
		_, err = cli.Txn(ctx).Then(ops...).Commit()
		return err
	}, nil
}

// DeleteRangeKey deletes key's key (tck.HandDeleter).
func (h *harness) DeleteRangeKey(ctx context.Context, key string) error {
	return h.deleteOne(ctx, h.prefix+"/range/"+key)
}

// DeleteSlot deletes slot's key, leaving its namespace's (tck.HandDeleter).
func (h *harness) DeleteSlot(ctx context.Context, ns string, slot int) error {
	return h.deleteOne(ctx, h.prefix+"/slot/"+ns+"/"+strconv.Itoa(slot))
}

func (h *harness) deleteOne(ctx context.Context, key string) error {
	cli, err := h.raw()
	if err != nil {
		return err
	}
	resp, err := cli.Delete(ctx, key)
	if err == nil && resp.Deleted != 1 {
		err = fmt.Errorf("deleting %s: %d keys deleted, want one", key, resp.Deleted)
	}
	return err
}

// EndSession revokes d's session lease, as etcdctl lease revoke does
// (tck.SessionEnder).
func (h *harness) EndSession(ctx context.Context, d driver.Store) error {
	s, ok := d.(*driverStore)
	if !ok {
		return fmt.Errorf("EndSession of %T, not a store of this harness", d)
	}
	ss := s.lastSession()
	if ss == nil {
		return fmt.Errorf("the store has no session to end")
	}
	cli, err := h.raw()
	if err != nil {
		return err
	}
	_, err = cli.Revoke(ctx, ss.id)
	return err
}

// corruptForms are the values CorruptRangeKey writes over a range key's
// "N" (tck.Corrupter): each is no value of the key's format (a decimal
// number as strconv writes it, ":sealed" after it once sealed).
var corruptForms = []func(n string) string{
	func(string) string { return "not-a-number" },
	func(n string) string { return "0" + n },        // a leading zero
	func(n string) string { return "+" + n },        // a sign
	func(n string) string { return n + ":sealedx" }, // a suffix not the seal's
}

// CorruptRangeKey writes the form-th wrong value over key's key (tck.Corrupter).
func (h *harness) CorruptRangeKey(ctx context.Context, key string, form int) (bool, error) {
	if form >= len(corruptForms) {
		return false, nil
	}
	cli, err := h.raw()
	if err != nil {
		return false, err
	}
	k := h.prefix + "/range/" + key
	resp, err := cli.Get(ctx, k)
	if err != nil {
		return false, err
	}
	if len(resp.Kvs) != 1 {
		return false, fmt.Errorf("range key %s is missing", k)
	}
	_, err = cli.Put(ctx, k, corruptForms[form](string(resp.Kvs[0].Value)))
	return err == nil, err
}

// slotCorruptForms are what CorruptSlot writes over a slot key's record
// (tck.SlotCorrupter): each is refused by driver.SlotRecord's
// UnmarshalBinary, so an acquire passes the slot over. The expiry is
// computed from the record's fields, never stored beside them, so no
// stored value can disagree with them.
var slotCorruptForms = []func(r driver.SlotRecord) ([]byte, error){
	func(driver.SlotRecord) ([]byte, error) { return []byte("not a slot record"), nil }, // an unknown version
	func(r driver.SlotRecord) ([]byte, error) { // an owner without an incarnation
		r.Incarnation = ""
		return r.MarshalBinary()
	},
}

// CorruptSlot puts the form-th wrong value over slot's key, as etcdctl put
// would (tck.SlotCorrupter).
func (h *harness) CorruptSlot(ctx context.Context, ns string, slot, form int) (bool, error) {
	if form >= len(slotCorruptForms) {
		return false, nil
	}
	cli, err := h.raw()
	if err != nil {
		return false, err
	}
	k := h.prefix + "/slot/" + ns + "/" + strconv.Itoa(slot)
	resp, err := cli.Get(ctx, k)
	if err != nil {
		return false, err
	}
	if len(resp.Kvs) != 1 {
		return false, fmt.Errorf("slot key %s is missing", k)
	}
	var r driver.SlotRecord
	if err := r.UnmarshalBinary(resp.Kvs[0].Value); err != nil {
		return false, fmt.Errorf("slot key %s: %w", k, err)
	}
	v, err := slotCorruptForms[form](r)
	if err != nil {
		return false, err
	}
	_, err = cli.Put(ctx, k, string(v))
	return err == nil, err
}

// DeleteLockHolder deletes the oldest waiter key of name, its holder's, as
// etcdctl del does (tck.LockDeleter).
func (h *harness) DeleteLockHolder(ctx context.Context, name string) error {
	cli, err := h.raw()
	if err != nil {
		return err
	}
	resp, err := cli.Get(ctx, h.prefix+"/lock/"+name+"/", append(clientv3.WithFirstCreate(), clientv3.WithKeysOnly())...)
	if err != nil {
		return err
	}
	if len(resp.Kvs) != 1 {
		return fmt.Errorf("lock %q has no holder key", name)
	}
	return h.deleteOne(ctx, string(resp.Kvs[0].Key))
}

// DeleteNamespace deletes ns's key, leaving its slot keys (tck.NamespaceDeleter).
func (h *harness) DeleteNamespace(ctx context.Context, ns string) error {
	return h.deleteOne(ctx, h.prefix+"/ns/"+ns)
}
