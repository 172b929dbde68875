package mysql

import (
	"bytes"
	"context"
	"errors"
	"log"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/go-sql-driver/mysql"
)

// lockedBuffer is a log's output, written by the driver's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNextBoundedByContext: a Next waiting on a row another transaction
// holds returns when its context ends (cutconn.go), long before the
// server's lock wait would, with the context's error, no Disconnected
// event and nothing logged (the driver's own watcher logs nothing either);
// the connection it was on is not used again, and the next Next starts
// above every value handed out.
func TestNextBoundedByContext(t *testing.T) {
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	var logged lockedBuffer
	if err := mysql.SetLogger(log.New(&logged, "[mysql] ", 0)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mysql.SetLogger(log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime|log.Lshortfile)) })
	rec := eventrec.New()
	// A lock wait of 30 s on the server: only the context can end the wait.
	st := openStore(t, srv.Addr(), database, map[string]string{"lockTimeout": "60s", "poolSize": "1"},
		append(rec.Options(), store.WithTimeout(time.Minute))...)
	ctx := t.Context()
	first, err := st.Ranges().Next(ctx, "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	holder := openRaw(t, srv)
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT next FROM "+database+".cosid_range WHERE `key` = 'k' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = st.Ranges().Next(short, "k", 1)
	took := time.Since(start)
	t.Logf("Next returned %v after it began, its context ending at 300ms", took)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on a held row, its context ended: %v; want context.DeadlineExceeded", err)
	}
	if took > 10*time.Second {
		t.Fatalf("Next returned %v after its context ended; want at once", took)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// The one connection of the pool was closed under the statement: the
	// next call must get a new one, not fail on the closed one.
	r, err := st.Ranges().Next(ctx, "k", 1)
	if err != nil {
		t.Fatalf("Next after a cancelled one: %v", err)
	}
	if r.Start <= first.Start {
		t.Fatalf("Next after a cancelled one = %v; want above %v", r, first)
	}
	if got := len(rec.Of(store.Disconnected)); got != 0 {
		t.Errorf("%d Disconnected events for a call whose context ended; want none", got)
	}
	if s := logged.String(); s != "" {
		t.Errorf("the driver logged, for a call whose context ended:\n%s", s)
	}
}
