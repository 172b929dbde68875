package sqlite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// childEnv makes the test binary a worker of TestProcesses, on the file it
// names.
const childEnv = "COSID_SQLITE_WORKER"

var workerNS = driver.Namespace{Name: "w", Limit: 3, Tolerance: 50 * time.Millisecond}

// TestProcesses is the never-twice and lease proof across OS processes on
// one file: worker processes allocate ranges and lease slots at once, two
// of them are SIGKILLed mid-flight and replaced by new ones that open the
// file the killed ones left, and the union of what every worker recorded
// must hold no value twice and no overlapping lease windows.
func TestProcesses(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		worker(path)
		return
	}
	path := filepath.Join(t.TempDir(), "ids.db")
	open(t, path).Close() // the tables exist before the race starts
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	start := func() (*exec.Cmd, io.WriteCloser, chan struct{}) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcesses$")
		cmd.Env = append(os.Environ(), childEnv+"="+path)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan struct{})
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			n := 0
			for sc.Scan() {
				mu.Lock()
				lines = append(lines, sc.Text())
				mu.Unlock()
				if n++; n == 20 {
					close(ready)
				}
			}
			if n < 20 {
				close(ready)
			}
		})
		return cmd, stdin, ready
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		ready chan struct{}
	}
	var procs []proc
	for range 4 {
		c, in, r := start()
		procs = append(procs, proc{c, in, r})
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill()
		}
	})
	// Kill two workers once they are well under way, mid-flight.
	for _, p := range procs[:2] {
		<-p.ready
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		c, in, r := start()
		procs = append(procs, proc{c, in, r})
	}
	for _, p := range procs[4:] {
		<-p.ready
	}
	// Let the survivors and the newcomers run until each killed worker's
	// last lease is followed by a later term of its slot (taken over once
	// expired, or after its release), then stop everyone.
	killed := map[string]bool{}
	for _, p := range procs[:2] {
		killed["p"+strconv.Itoa(p.cmd.Process.Pid)] = true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !takenOver(&mu, &lines, killed) {
		if time.Now().After(deadline) {
			t.Fatal("no later term followed the killed workers' last leases within 60s")
		}
		time.Sleep(20 * time.Millisecond) // the workers' records, read from their output as they come
	}
	for _, p := range procs {
		p.stdin.Close()
	}
	for i, p := range procs {
		err := p.cmd.Wait()
		var exit *exec.ExitError
		if i < 2 {
			if !errors.As(err, &exit) {
				t.Errorf("killed worker %d: %v", i, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
	}
	wg.Wait()
	checkRecords(t, lines)
}

// takenOver reports whether, in the records so far, every last lease of a
// killed owner is followed by a term of its slot with a higher fence.
func takenOver(mu *sync.Mutex, lines *[]string, killed map[string]bool) bool {
	mu.Lock()
	defer mu.Unlock()
	type lease struct {
		slot  string
		fence int64
	}
	last := map[string]lease{}    // killed owner -> its last lease
	highest := map[string]int64{} // slot -> highest fence recorded
	for _, l := range *lines {
		f := strings.Fields(l)
		if len(f) != 6 || f[0] != "L" {
			continue
		}
		fence, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue // checkRecords reports it
		}
		highest[f[1]] = max(highest[f[1]], fence)
		if killed[f[5]] {
			last[f[5]] = lease{f[1], fence}
		}
	}
	for owner := range killed {
		l, ok := last[owner]
		if ok && highest[l.slot] <= l.fence {
			return false
		}
	}
	return true
}

// checkRecords checks what the workers recorded: "R start end" for ranges,
// "L slot fence floor ceiling owner" for each lease seen (acquired or renewed).
func checkRecords(t *testing.T, lines []string) {
	type rng struct{ start, end int64 }
	var ranges []rng
	type term struct {
		owner          string
		floor, ceiling int64
	}
	terms := map[int]map[int64]*term{}
	for _, l := range lines {
		f := strings.Fields(l)
		n := make([]int64, len(f))
		for i := 1; i < len(f) && i < 5; i++ {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Errorf("record %q: field %d: %v", l, i, err)
			}
			n[i] = v
		}
		switch {
		case len(f) == 3 && f[0] == "R":
			ranges = append(ranges, rng{n[1], n[2]})
		case len(f) == 6 && f[0] == "L":
			slot, fence, floor, ceiling := int(n[1]), n[2], n[3], n[4]
			if terms[slot] == nil {
				terms[slot] = map[int64]*term{}
			}
			tm := terms[slot][fence]
			if tm == nil {
				terms[slot][fence] = &term{owner: f[5], floor: floor, ceiling: ceiling}
				continue
			}
			if tm.owner != f[5] || tm.floor != floor {
				t.Errorf("slot %d fence %d held by %s (floor %d) and by %s (floor %d)", slot, fence, tm.owner, tm.floor, f[5], floor)
			}
			tm.ceiling = max(tm.ceiling, ceiling)
		default:
			t.Errorf("record %q: not a range or a lease", l)
		}
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].start < ranges[j].start })
	for i := 1; i < len(ranges); i++ {
		if ranges[i].start < ranges[i-1].end {
			t.Errorf("ranges overlap: %v and %v", ranges[i-1], ranges[i])
		}
	}
	nterms := 0
	for slot, ts := range terms {
		fences := make([]int64, 0, len(ts))
		for f := range ts {
			fences = append(fences, f)
		}
		sort.Slice(fences, func(i, j int) bool { return fences[i] < fences[j] })
		nterms += len(fences)
		for i := 1; i < len(fences); i++ {
			prev, cur := ts[fences[i-1]], ts[fences[i]]
			if cur.floor < prev.ceiling {
				t.Errorf("slot %d: term of fence %d (%s) starts at floor %d, below the ceiling %d of fence %d (%s)",
					slot, fences[i], cur.owner, cur.floor, prev.ceiling, fences[i-1], prev.owner)
			}
		}
	}
	t.Logf("%d ranges and %d lease terms recorded by 6 processes, 2 of them SIGKILLed", len(ranges), nterms)
	if len(ranges) < 100 || nterms < 10 {
		t.Errorf("too little work to prove anything: %d ranges, %d terms", len(ranges), nterms)
	}
}

// worker allocates and leases until its stdin closes, writing each result
// to stdout as it gets it (unbuffered: a SIGKILL loses nothing recorded).
func worker(path string) {
	d, err := fromOptions(map[string]string{"path": path, "busyTimeout": "30s"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	s := d.(*driverStore)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	me := strconv.Itoa(os.Getpid())
	for i := 0; ctx.Err() == nil; i++ {
		start, err := s.Next(ctx, "k", int64(1+i%7))
		if err == nil {
			fmt.Fprintf(os.Stdout, "R %d %d\n", start, start+int64(1+i%7))
		}
		if i%5 != 0 {
			continue
		}
		l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: workerNS, Owner: "p" + me, Incarnation: me,
			TTL: 200 * time.Millisecond, Preferred: i % 3})
		if err != nil {
			continue
		}
		fmt.Fprintf(os.Stdout, "L %d %d %d %d p%s\n", l.Slot, l.Fence, l.Floor, l.Ceiling, me)
		if l2, err := s.Renew(ctx, l); err == nil {
			fmt.Fprintf(os.Stdout, "L %d %d %d %d p%s\n", l2.Slot, l2.Fence, l2.Floor, l2.Ceiling, me)
			l = l2
		}
		if i%2 == 0 {
			_ = s.Release(ctx, l, -1)
		}
	}
	s.Close()
	os.Exit(0)
}
