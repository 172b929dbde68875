package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// browser is a headless Chromium with one tab, and what its console said.
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string // console errors, uncaught exceptions, failed loads
}

// chromium finds the browser: $CHROMIUM, else chromium on the PATH.
func chromium() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	return exec.LookPath("chromium")
}

// newBrowser starts Chromium for t; it is stopped when t ends. A page
// left on screen when t failed is saved as a screenshot first.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := chromium()
	if err != nil {
		t.Fatalf("no Chromium to drive: %v; run `make chromium` (scripts/install-chromium.sh installs Debian's chromium package) or set CHROMIUM to its path", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests run as root in CI; the page is our own
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WSURLReadTimeout(90*time.Second), // a loaded machine starts it slowly
	)
	b := &browser{t: t}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b.ctx = ctx
	// The first Run starts the browser, for as long as ctx lives: no
	// timeout on it (the allocator's WSURLReadTimeout bounds the start).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("Chromium (%s) did not start: %v", path, err)
	}
	t.Cleanup(b.screenshotIfFailed)
	return b
}

func (b *browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var args []string
		for _, a := range ev.Args {
			args = append(args, string(a.Value))
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
	case *runtime.EventExceptionThrown:
		msg = "uncaught: " + ev.ExceptionDetails.Text
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level != cdplog.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.errs = append(b.errs, msg)
	b.mu.Unlock()
}

// run runs a, bounded so that a selector that never shows fails the test
// instead of hanging it.
func run[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

// load opens url, waits for the page, and fails t on any console error.
func (b *browser) load(url string) {
	b.t.Helper()
	run(b, "load "+url, chromedp.Steps(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body"))))
	b.mu.Lock()
	errs := b.errs
	b.errs = nil
	b.mu.Unlock()
	if len(errs) > 0 {
		b.t.Errorf("the console of %s has errors:\n%s", url, strings.Join(errs, "\n"))
	}
}

// text returns the text of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(run(b, "read "+sel, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible)))
}

// screenshot writes the page as a PNG to path.
func (b *browser) screenshot(path string) error {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// screenshotIfFailed saves what the browser shows when the test failed,
// in $STOREHTTP_FAILURE_DIR or the system's temporary directory.
func (b *browser) screenshotIfFailed() {
	if !b.t.Failed() {
		return
	}
	dir := os.Getenv("STOREHTTP_FAILURE_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+"-failed.png")
	if err := b.screenshot(path); err != nil {
		b.t.Logf("no screenshot of the failed page: %v", err)
		return
	}
	b.t.Logf("screenshot of the failed page: %s", path)
}
