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
// nil if anything else did. A refused write also reads the slots the
// search tries next (ahead), so that a crowd's loser writes for a slot
// free now, not for one its first read found free seconds ago.
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
	ahead := a.ahead(n)
	els := []clientv3.Op{clientv3.OpGet(sk), clientv3.OpGet(ok2, clientv3.WithKeysOnly()), clientv3.OpGet(nk),
		clientv3.OpGet(pk, clientv3.WithKeysOnly())}
	els = append(els, s.tallyOps(name)...)
	for _, m := range ahead {
		els = append(els, clientv3.OpGet(s.slotKey(name, m)))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Else(els...).Commit()
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
	if nsNow != nsMod || modOf(resp.Responses[3].GetResponseRange().Kvs) != purged {
		return driver.Lease{}, false, nil, nil // start over: reads the seal, if that was it
	}
	rev := resp.Header.Revision
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if ownerNow != ownerMod {
		// The owner index changed: by this very write when an attempt of
		// it, cut by its deadline, was applied before clientv3 sent it
		// again. The slot then holds this acquire's term (owner and
		// incarnation), written under the compares above, which still
		// hold: it is the lease, without a pass to find it by the index.
		// Anything else starts over.
		if len(kvs) == 1 {
			if mine := withRev(slotFrom(sk, kvs[0], driver.SlotRecord{}), rev); mine.err == nil &&
				mine.r.Owner == req.Owner && mine.r.Incarnation == req.Incarnation {
				if v, _ := mine.r.Judge(req, a.now); v == driver.SlotOwn {
					return driver.Lease{}, false, &mine, nil
				}
			}
		}
		return driver.Lease{}, false, nil, nil
	}
	if err := a.learnTally(resp.Responses[4].GetResponseRange(), resp.Responses[5].GetResponseRange()); err != nil {
		return driver.Lease{}, false, nil, err
	}
	for i, m := range ahead {
		if kvs := resp.Responses[6+i].GetResponseRange().Kvs; len(kvs) == 1 {
			a.slots[m] = withRev(slotFrom(s.slotKey(name, m), kvs[0], a.floor), rev)
		} else {
			a.slots[m] = a.missing(rev)
		}
	}
	if len(kvs) == 0 && st.mod == 0 {
		now2 := a.missing(rev) // still missing: only the namespace was created
		return driver.Lease{}, false, &now2, nil
	}
	if len(kvs) == 0 {
		return driver.Lease{}, false, nil, nil // deleted meanwhile: start over
	}
	now2 := withRev(slotFrom(sk, kvs[0], driver.SlotRecord{}), rev)
	return driver.Lease{}, false, &now2, nil
}

// aheadSlots is how many slots a refused term write reads of those its
// search tries next.
const aheadSlots = 8

// ahead are the slots the search tries after slot n, in its order: the
// next aheadSlots of them (not n itself).
func (a *acquisition) ahead(n int) []int {
	limit := a.req.Namespace.Limit
	out := make([]int, 0, min(aheadSlots, limit-1))
	for m := (n + 1) % limit; m != n && len(out) < aheadSlots; m = (m + 1) % limit {
		out = append(out, m)
	}
	return out
}
