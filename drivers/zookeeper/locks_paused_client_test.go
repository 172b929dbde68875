package zookeeper

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/zktest"
)

// pausedHolderEnv makes the test binary the holder process of
// TestLockClientPaused: "connectString root sessionTimeout".
const pausedHolderEnv = "COSID_TEST_PAUSED_HOLDER"

// TestLockClientPaused: the holder's own process (not a server) is paused
// (SIGSTOP) while it holds a lock, for as long as it takes its session to
// expire and store B, in this process, to be granted the lock; only then is
// it resumed (SIGCONT). The holder spins on l.Lost() from before the pause,
// so its first look after the resume comes at once: every look after the
// resume happens after B's grant (SIGCONT is sent after it), so each must
// find Lost closed. The holder's deadline passed while it slept; a timer
// that has not run yet must not let it believe it still holds the lock.
func TestLockClientPaused(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		addr := srv.Addr()
		for round := range 3 {
			clientPausedRound(t, addr, round)
		}
	})
}

func clientPausedRound(t *testing.T, addr string, round int) {
	const timeout = 2 * time.Second
	root := randomRoot()
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", pausedHolderEnv, addr, root, timeout))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the holder process: %v", err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	}()
	out := bufio.NewScanner(outPipe)
	line := func(what string) string {
		lines := make(chan string, 1)
		go func() {
			if out.Scan() {
				lines <- out.Text()
			}
			close(lines)
		}()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("round %d: the holder process ended before %s", round, what)
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: the holder process did not report %s within 60s", round, what)
		}
		return ""
	}
	if l := line("holding"); !strings.HasPrefix(l, "held ") {
		t.Fatalf("round %d: the holder process: %q", round, l)
	}
	// B's own session is not the subject: at load 40 a 2s one went
	// unconfirmed and B's hold was lost before its Unlock.
	sb := openTest(t, testOptions(addr, map[string]string{"root": root, "sessionTimeout": "20s"}), nil)
	defer sb.Close()
	ch := lockAsync(t, ctx, sb, "paused", "b")
	lockEventually(t, 20*time.Second, "B queued", func() bool { return queueLength(ctx, sb, "paused") == 2 })
	if _, err := fmt.Fprintln(in, "spin"); err != nil {
		t.Fatal(err)
	}
	if l := line("spinning"); l != "spinning" {
		t.Fatalf("round %d: the holder process: %q", round, l)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	pausedAt := monoNow()
	r := awaitLock(t, ch, 30*timeout+60*time.Second, "B's grant while the holder process is paused")
	if r.err != nil {
		t.Fatalf("round %d: B's Lock: %v", round, r.err)
	}
	grantAt := monoNow()
	// The pause lasts at least 2T, so the holder tells it from a mere
	// descheduling on a loaded machine (it looks for a gap of T).
	if rest := pausedAt + 2*timeout - monoNow(); rest > 0 {
		time.Sleep(rest)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	report := line("its Lost")
	var opens, looks int
	if _, err := fmt.Sscanf(report, "lost opens-after-resume=%d looks-after-resume=%d", &opens, &looks); err != nil {
		t.Fatalf("round %d: the holder process: %q", round, report)
	}
	t.Logf("round %d: holder paused at +0, B granted at +%v, holder resumed after it; holder looked at Lost %d times after the resume, %d found it open",
		round, grantAt-pausedAt, looks, opens)
	if opens > 0 {
		t.Errorf("round %d: after B was granted the lock, the resumed holder found its Lost open %d times: two holders", round, opens)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Errorf("round %d: B's Unlock: %v", round, err)
	}
}

// pausedHolderChild runs the holder process if the environment says so:
// it locks, reports, waits for "spin", then spins on Lost until it closes,
// counting the looks that found it open after a gap of more than the session
// timeout in its spinning (the pause, which lasts twice as long). It reports true if it ran.
func pausedHolderChild() bool {
	spec := os.Getenv(pausedHolderEnv)
	if spec == "" {
		return false
	}
	fields := strings.Fields(spec)
	if len(fields) != 3 {
		fmt.Fprintf(os.Stderr, "%s=%q: want 3 fields\n", pausedHolderEnv, spec)
		os.Exit(2)
	}
	timeout, err := time.ParseDuration(fields[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := open(testOptions(fields[0], map[string]string{"root": fields[1], "sessionTimeout": fields[2]}), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	l, err := s.Lock(context.Background(), "paused", "a", true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("held " + strconv.FormatInt(l.Fence(), 10))
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "spin" {
		os.Exit(2)
	}
	fmt.Println("spinning")
	gap := timeout
	resumed := false
	opens, looks := 0, 0
	prev := time.Now()
	for {
		now := time.Now()
		if now.Sub(prev) > gap {
			resumed = true // the pause ended between prev and now
		}
		prev = now
		select {
		case <-l.Lost():
			if resumed {
				looks++
			}
			fmt.Printf("lost opens-after-resume=%d looks-after-resume=%d\n", opens, looks)
			os.Exit(0)
		default:
			if resumed {
				looks++
				opens++
			}
		}
	}
}
