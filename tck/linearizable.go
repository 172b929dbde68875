package tck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cosid-go/store"
)

// checkLinearizable: goroutines on several stores over one storage call
// Next, Current and Seal, and TryLock, Lock and Unlock, recording when each
// call started and ended; porcupine then looks for an order of the calls,
// each taking effect at one instant within its own interval, in which every
// answer is the model's. Without one, some answer is one no single-copy
// store could give: a value handed out twice, a lost update, two holders.
func checkLinearizable(e *env) {
	s := e.suite
	if !s.Ranges && !s.Locks {
		e.t.Skip("the driver declares neither Ranges nor Locks")
	}
	const stores, workers, calls = 3, 6, 25
	sts := make([]*store.Store, stores)
	for i := range sts {
		sts[i] = e.open()
	}
	var (
		clock atomic.Int64 // orders call and return events
		mu    sync.Mutex
		ops   []porcupine.Operation
	)
	record := func(client int, in linInput, call func() linOutput) {
		start := clock.Add(1)
		out := call()
		end := clock.Add(1)
		mu.Lock()
		ops = append(ops, porcupine.Operation{ClientId: client, Input: in, Call: start, Output: out, Return: end})
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range workers {
		st := sts[w%stores]
		rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
		wg.Go(func() {
			for range calls {
				if e.ctx.Err() != nil {
					return
				}
				linCall(e, st, w, rng, record)
			}
		})
	}
	wg.Wait()
	res, info := porcupine.CheckOperationsVerbose(linModel, ops, e.scaled(10*time.Second))
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		e.t.Logf("porcupine gave up on %d calls within its time bound: no verdict", len(ops))
	default:
		var parts [][]string
		for _, p := range info.PartialLinearizationsOperations() {
			var best []string
			for _, lin := range p {
				if len(lin) > len(best) {
					best = best[:0]
					for _, op := range lin {
						best = append(best, linModel.DescribeOperation(op.Input, op.Output))
					}
				}
			}
			parts = append(parts, best)
		}
		e.t.Errorf("the %d concurrent calls are not linearizable: no order of them gives the answers the stores gave\n"+
			"(see driver.RangeStore.Next: no value is ever returned twice; driver.Locker.Lock: at most one holder).\n"+
			"Longest orders that work, per key or lock: %q", len(ops), parts)
	}
}

// linInput is one call: a range key's (Next, Current, Seal) or a lock's
// (TryLock, Lock, Unlock). key names the key or lock; client the worker.
type linInput struct {
	op     string
	key    string
	step   int64
	client int
}

// linOutput is a call's answer: value (start, next, fence), sealed, and the
// error kind ("" for none).
type linOutput struct {
	value  int64
	sealed bool
	err    string
}

// linState is one key's or one lock's state; the history is partitioned by
// key, so each partition's state is small.
type linState struct {
	next   int64
	sealed bool
	holder int // the client holding the lock, -1 when free
	fence  int64
}

var linModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			k := op.Input.(linInput).key
			if _, ok := by[k]; !ok {
				order = append(order, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return linState{holder: -1} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(linState), input.(linInput), output.(linOutput)
		switch in.op {
		case "Next":
			if s.sealed {
				return out.err == "sealed", s
			}
			if out.err != "" || out.value != s.next {
				return false, s
			}
			s.next += in.step
			return true, s
		case "Current":
			return out.err == "" && out.value == s.next && out.sealed == s.sealed, s
		case "Seal":
			s.sealed = true
			return out.err == "" && out.value == s.next, s
		case "TryLock", "Lock":
			if out.err == "locked" {
				// A TryLock may also fail on another store's entry that
				// is still being removed (driver.Locker.TryLock).
				return in.op == "TryLock", s
			}
			if out.err != "" || s.holder >= 0 || out.value <= s.fence {
				return false, s
			}
			s.holder, s.fence = in.client, out.value
			return true, s
		case "Unlock":
			if out.err != "" || s.holder != in.client {
				return false, s
			}
			s.holder = -1
			return true, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		res := fmt.Sprint(out.value)
		if out.err != "" {
			res = out.err
		}
		return fmt.Sprintf("w%d %s(%q, %d) -> %s", in.client, in.op, in.key, in.step, res)
	},
}

// linCall makes one random call (or, for a lock, a hold and its release)
// and records it.
func linCall(e *env, st *store.Store, w int, rng *rand.Rand, record func(int, linInput, func() linOutput)) {
	s := e.suite
	useLocks := s.Locks && (!s.Ranges || rng.IntN(2) == 0)
	if !useLocks {
		key := []string{"x", "y"}[rng.IntN(2)]
		switch r := rng.IntN(40); {
		case r == 0:
			record(w, linInput{op: "Seal", key: key, client: w}, func() linOutput {
				n, err := st.Ranges().Seal(e.ctx, key)
				return linOutput{value: n, err: linErr(e, err)}
			})
		case r < 10:
			record(w, linInput{op: "Current", key: key, client: w}, func() linOutput {
				n, sealed, err := st.Ranges().Current(e.ctx, key)
				return linOutput{value: n, sealed: sealed, err: linErr(e, err)}
			})
		default:
			step := int64(1 + rng.IntN(3))
			record(w, linInput{op: "Next", key: key, step: step, client: w}, func() linOutput {
				r, err := st.Ranges().Next(e.ctx, key, step)
				return linOutput{value: r.Start, err: linErr(e, err)}
			})
		}
		return
	}
	name := []string{"p", "q"}[rng.IntN(2)]
	op := "TryLock"
	if rng.IntN(2) == 0 {
		op = "Lock"
	}
	var k *store.Lock
	record(w, linInput{op: op, key: name, client: w}, func() linOutput {
		var err error
		if op == "Lock" {
			ctx, cancel := context.WithTimeout(e.ctx, e.lockWait)
			defer cancel()
			k, err = st.Locks().Lock(ctx, name)
		} else {
			k, err = st.Locks().TryLock(e.ctx, name)
		}
		if err != nil {
			return linOutput{err: linErr(e, err)}
		}
		return linOutput{value: k.Fence()}
	})
	if k == nil {
		return
	}
	record(w, linInput{op: "Unlock", key: name, client: w}, func() linOutput {
		return linOutput{err: linErr(e, k.Unlock(e.ctx))}
	})
}

// linErr names the kind of err the model knows, and fails the check on any
// other: without faults, nothing else may happen.
func linErr(e *env, err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, store.ErrSealed):
		return "sealed"
	case errors.Is(err, store.ErrLocked):
		return "locked"
	}
	e.errorf("a call failed without a fault: %v", err)
	return "unexpected: " + err.Error()
}
