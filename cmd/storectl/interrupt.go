package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cosid-go/store/driver"
)

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels, its cause naming the signal. Commands that write check it
// between steps and finish the step in hand on a context of their own
// (context.WithoutCancel): a key sealed in the source and not yet started
// in the target must not be left that way. Later signals are caught as
// well and only say so: a second Ctrl-C must not kill storectl inside a
// step, which the store's timeout bounds anyway.
func interruptible(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				if ctx.Err() == nil {
					fmt.Fprintf(stderr, "storectl: %s: finishing the step in hand, then stopping\n", sigName(sig))
					cancel(errors.New(sigName(sig)))
				} else {
					fmt.Fprintf(stderr, "storectl: %s: still finishing the step in hand\n", sigName(sig))
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

func sigName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// interrupted reports whether a signal stopped the command, and which.
func interrupted(ctx context.Context) (string, bool) {
	if ctx.Err() == nil {
		return "", false
	}
	return context.Cause(ctx).Error(), true
}

// interruptedf reports a command a signal stopped (exit code 4).
func interruptedf(format string, args ...any) error {
	return &exitError{code: exitInterrupted, err: fmt.Errorf(format, args...)}
}

// commandLine is args as a command to run again, shell-quoted where
// needed, secrets shown as ***.
func commandLine(args []string) string {
	out := []string{"storectl"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out = append(out, a)
	}
	return driver.Redact(strings.Join(out, " "))
}

// rerunAdvice says how to finish what a signal stopped.
func rerunAdvice(e *env) string {
	line := commandLine(e.args)
	advice := "Run the same command again to finish (it skips what is done):\n  " + line
	if strings.Contains(line, "***") {
		advice += "\n(with the secrets shown as *** given again)"
	}
	return advice
}

// progress counts what a migration moved (or found moved already).
type progress struct{ keys, namespaces int }

// interruptedAt says how far a migration a signal stopped got, and what
// to run next.
func (m *migration) interruptedAt(sig string, p *plan, done progress, failed int) error {
	msg := fmt.Sprintf("%s: stopped after moving %d of %d keys and %d of %d namespaces; "+
		"each key and namespace is either moved or untouched (the one in hand was finished)",
		sig, done.keys, len(p.keys), done.namespaces, len(p.namespaces))
	if failed > 0 {
		msg += fmt.Sprintf(", and %d steps failed (see above)", failed)
	}
	return interruptedf("%s. Keep the instances of both stores stopped: the keys not moved yet are still open in the "+
		"source and missing in the target.\n%s", msg, rerunAdvice(m.e))
}
