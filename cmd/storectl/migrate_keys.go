package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/cosid-go/store"
)

// planKeys reads the keys of both stores side by side, each a sorted
// listing read a page at a time (RangeStore.All), so that neither store's
// keys are held at once nor read again one by one: what the plan keeps is
// one step per key it moves.
func (m *migration) planKeys(ctx context.Context, p *plan, problem func(string, ...any)) error {
	selected := map[string]bool{}
	for _, k := range m.keys {
		selected[k] = false // true once found in the source
	}
	dst := newCursor(m.dst.Ranges().All(ctx))
	defer dst.stop()
	dstMissing := 0 // source keys the target cannot take: it has no range keys
	for src, err := range m.src.Ranges().All(ctx) {
		if errors.Is(err, store.ErrUnsupported) {
			if len(m.keys) > 0 {
				problem("the source driver has no range keys")
			}
			return nil
		}
		if err != nil {
			return err
		}
		if len(m.keys) > 0 {
			if _, ok := selected[src.Key]; !ok {
				continue
			}
			selected[src.Key] = true
		}
		at, err := dst.seek(src.Key)
		if errors.Is(err, store.ErrUnsupported) {
			dstMissing++
			continue
		}
		if err != nil {
			return err
		}
		m.checkKey(p, problem, src, at)
	}
	for _, k := range m.keys {
		if !selected[k] {
			problem("key %q: no such key in the source", k)
			selected[k] = true // named twice: said once
		}
	}
	if dstMissing > 0 {
		problem("the target driver has no range keys, and the source has %s", count(dstMissing, "key"))
	}
	if len(m.keys) > 0 {
		// In the order the keys were named, as given.
		order := map[string]int{}
		for i, k := range m.keys {
			if _, ok := order[k]; !ok {
				order[k] = i
			}
		}
		slices.SortStableFunc(p.keys, func(a, b keyStep) int { return order[a.key] - order[b.key] })
	}
	return nil
}

// checkKey plans the move of src, the source's key, beside at, the
// target's key of that name (zero when the target has none).
func (m *migration) checkKey(p *plan, problem func(string, ...any), src, at store.KeyInfo) {
	k, inTarget := src.Key, at.Key == src.Key
	if inTarget {
		switch {
		case at.Sealed:
			problem("key %q: the target has it sealed at %d (it moved out of the target before), and the portable API "+
				"cannot reopen a sealed key: %s", k, at.Next, sealedTargetAdvice)
		case at.Next < src.Next:
			problem("key %q: the target has it at %d, below %d in the source: values could repeat", k, at.Next, src.Next)
		case src.Sealed:
			p.moved = true
		case at.Next == src.Next:
			// An interrupted migrate started it in the target, then
			// stopped before sealing the source: it finishes here.
		default:
			// migrate starts a key in the target at the source's
			// value: this key was used in the target on its own.
			fmt.Fprintf(m.e.stderr, "warning: key %s: the target has it at %d, though the source never moved it (not sealed): "+
				"if an instance used it in the target from 0, values below %d were handed out by both stores\n", k, at.Next, src.Next)
		}
	}
	if src.Sealed && !inTarget && !m.adopt {
		p.refused = append(p.refused, fmt.Sprintf("key %q: sealed in the source at %d and missing in the target", k, src.Next))
	}
	p.keys = append(p.keys, keyStep{key: k, srcNext: src.Next, srcSealed: src.Sealed, inTarget: inTarget})
}

// cursor walks a sorted listing forward, for a merge with another.
type cursor struct {
	next func() (store.KeyInfo, error, bool)
	stop func()
	at   store.KeyInfo
	err  error
	done bool
}

func newCursor(all iter.Seq2[store.KeyInfo, error]) *cursor {
	next, stop := iter.Pull2(all)
	return &cursor{next: next, stop: stop}
}

// seek returns the listing's entry of key, or a zero KeyInfo when it has
// none: it moves past every entry below key.
func (c *cursor) seek(key string) (store.KeyInfo, error) {
	for !c.done && c.err == nil && (c.at.Key == "" || c.at.Key < key) {
		var ok bool
		c.at, c.err, ok = c.next()
		c.done = !ok
	}
	if c.err != nil {
		return store.KeyInfo{}, c.err
	}
	if !c.done && c.at.Key == key {
		return c.at, nil
	}
	return store.KeyInfo{}, nil
}
