package storehttp

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// Live answers 200 "ok" while the process serves HTTP: a liveness probe
// that fails only when the process is stuck or gone, never because the
// store is down (restarting the process would not bring the store back).
func (m *Monitor) Live() http.Handler {
	return readOnly(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
}

// Ready answers 200 "ready" when the store answers a Ping within
// Options.PingTimeout (a driver without Ping counts as answering) and no
// generator added is sealed or lost; otherwise 503 with one line per
// problem. It is the probe that takes the process out of a load balancer.
func (m *Monitor) Ready() http.Handler {
	return readOnly(func(w http.ResponseWriter, r *http.Request) {
		s := m.Snapshot(r.Context())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !s.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready")
			for _, p := range s.Problems {
				fmt.Fprintln(w, p)
			}
			return
		}
		fmt.Fprintln(w, "ready")
	})
}

// StatusJSON serves the Snapshot as JSON. It answers 200 whether or not
// the store is ready: the status is in the body.
func (m *Monitor) StatusJSON() http.Handler {
	return readOnly(func(w http.ResponseWriter, r *http.Request) {
		b, err := json.MarshalIndent(m.Snapshot(r.Context()), "", "  ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(b, '\n'))
	})
}

// Status serves the status page: HTML rendered on the server, readable
// without JavaScript (it has none).
func (m *Monitor) Status() http.Handler {
	return readOnly(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if err := page.Execute(&buf, m.view(r.Context())); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		// Inline styles and a data: icon only; nothing runs.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
		w.Write(buf.Bytes())
	})
}

// readOnly serves GET and HEAD only: nothing here writes.
func readOnly(f http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: the status handlers only read", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		f(w, r)
	})
}

//go:embed status.html
var pageText string

var page = template.Must(template.New("status").Funcs(template.FuncMap{
	"ms": func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() },
	"left": func(ms int64) string {
		return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
	},
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"epoch": func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") },
	"join":  strings.Join,
}).Parse(pageText))

// view is the page's data: the snapshot and what the page draws from it.
type view struct {
	Snapshot
	Refresh int // seconds; 0: no reload
	Bars    []bar
}

// bar draws a lease on a timeline from its last renewal (ExpiresAt - TTL)
// to its ceiling: the part of the ttl used, the time left, and the
// tolerance up to the ceiling, in percent of the whole.
type bar struct {
	Used, Left, Tolerance float64
}

func (m *Monitor) view(ctx context.Context) view {
	v := view{Snapshot: m.Snapshot(ctx)}
	if m.opts.RefreshEvery > 0 {
		v.Refresh = max(1, int(m.opts.RefreshEvery/time.Second))
	}
	for _, sf := range v.Snowflakes {
		tol := max(sf.Ceiling-sf.ExpiresAt, 0)
		left := min(max(sf.LeftMs, 0), sf.TTLMs)
		total := float64(sf.TTLMs + tol)
		if total <= 0 {
			v.Bars = append(v.Bars, bar{})
			continue
		}
		v.Bars = append(v.Bars, bar{
			Used:      100 * float64(sf.TTLMs-left) / total,
			Left:      100 * float64(left) / total,
			Tolerance: 100 * float64(tol) / total,
		})
	}
	return v
}
