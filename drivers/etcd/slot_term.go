package etcd

import (
	"context"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// createNamespace writes the missing namespace; created is false when
// another store created it meanwhile.
func (a *acquisition) createNamespace(ctx context.Context) (created bool, err error) {
	tr, err := a.s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(a.nk), "=", 0)).
		Then(clientv3.OpPut(a.nk, formatNamespace(a.req.Namespace, false))).Commit()
	if err = a.s.check(ctx, err); err != nil {
		return false, err
	}
	return tr.Succeeded, nil
}

// writeTerm writes slot n's new term and the owner index, comparing both
// and the namespace key (at nsMod; 0: missing, created here) with what was
// read, so no term starts after a seal, and the purged fence floor's key
// (at purged): a slot a purge deleted meanwhile is missing either way, but
// its fence is then in the floor, not in what was read. When another store
// wrote first, fresh is the slot as it is now if only the slot changed (or
// the namespace was created as this pass would have: the pass adopts it),
// nil if anything else did.
func (a *acquisition) writeTerm(ctx context.Context, n int, st slotState) (l driver.Lease, ok bool, fresh *slotState, err error) {
	s, req, nsMod, ownerMod, purged := a.s, a.req, a.nsMod, a.ownerMod, a.purged
	createNS := nsMod == 0
	name := req.Namespace.Name
	r := st.r.NewTerm(req, a.now)
	data, err := r.MarshalBinary()
	if err != nil {
		return driver.Lease{}, false, nil, err
	}
	sk, ok2, nk := s.slotKey(name, n), s.ownerKey(name, req.Owner), s.nsKey(name)
	pk := s.key("purged")
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(sk), "=", st.mod),
		clientv3.Compare(clientv3.ModRevision(ok2), "=", ownerMod),
		clientv3.Compare(clientv3.ModRevision(pk), "=", purged),
	}
	ops := []clientv3.Op{
		clientv3.OpPut(sk, string(data)),
		clientv3.OpPut(ok2, formatIndex(driver.RememberSlot(a.index, n))),
	}
	if st.mod == 0 {
		ops = append(ops, s.bump(name, a.tally)) // a slot key created: counted
	}
	if createNS {
		// Found missing: created here, or, if another store created it
		// meanwhile as this one would have (unsealed, same settings: a
		// fleet's acquirers all find it missing), the term is written in
		// it. Anything else writes nothing; the pass starts over.
		v := formatNamespace(req.Namespace, false)
		ops = []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(nk), "=", 0)},
			append(slices.Clip(ops), clientv3.OpPut(nk, v)),
			[]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(nk), "=", v)}, ops, nil)})}
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(nk), "=", nsMod))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).
		Else(clientv3.OpGet(sk), clientv3.OpGet(ok2, clientv3.WithKeysOnly()), clientv3.OpGet(nk),
			clientv3.OpGet(pk, clientv3.WithKeysOnly())).Commit()
	if err = s.check(ctx, err); err != nil {
		// Unknown outcome: a retried acquire finds the term by owner and
		// incarnation (SlotOwn) if it was written.
		return driver.Lease{}, false, nil, err
	}
	if resp.Succeeded && createNS {
		in := resp.Responses[0].GetResponseTxn()
		if !in.Succeeded && !in.Responses[0].GetResponseTxn().Succeeded {
			return driver.Lease{}, false, nil, nil // sealed or other settings: start over
		}
	}
	if resp.Succeeded {
		s.guardFence(sk, slotState{r: r, rev: resp.Header.Revision})
		l = r.Lease(name, n)
		l.State = resp.Header.Revision
		return l, true, nil, nil
	}
	var ownerNow int64
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		ownerNow = kvs[0].ModRevision
	}
	var nsNow int64
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) == 1 {
		nsNow = kvs[0].ModRevision
		if createNS && string(kvs[0].Value) == formatNamespace(req.Namespace, false) {
			// Created meanwhile, unsealed and as this pass would have
			// (a fleet's acquirers all find it missing): the pass goes on
			// in it, rather than all but one starting over. The compares
			// on the owner index and the purge hold what else it read.
			a.createNS, a.nsMod, nsMod = false, nsNow, nsNow
		}
	}
	if ownerNow != ownerMod || nsNow != nsMod || modOf(resp.Responses[3].GetResponseRange().Kvs) != purged {
		return driver.Lease{}, false, nil, nil // start over: reads the seal, if that was it
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 && st.mod == 0 {
		now2 := a.missing(resp.Header.Revision) // still missing: only the namespace was created
		return driver.Lease{}, false, &now2, nil
	}
	if len(kvs) == 0 {
		return driver.Lease{}, false, nil, nil // deleted meanwhile: start over
	}
	now2 := withRev(slotFrom(sk, kvs[0], driver.SlotRecord{}), resp.Header.Revision)
	return driver.Lease{}, false, &now2, nil
}
