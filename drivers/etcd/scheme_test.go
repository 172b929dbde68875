package etcd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// testTLSSchemeCase (in TestTLS): an https:// endpoint spelled in upper or
// mixed case is https: with the TLS files it works; without them the
// client still speaks TLS (the member's certificate is from a CA the
// system does not trust, which the error says), not plaintext. An
// http:// one in any case with TLS files, or mixed with https://, is
// refused.
func testTLSSchemeCase(t *testing.T, env tlsEnv) {
	hostPort := strings.TrimPrefix(env.c.Endpoints()[0], "https://")
	for _, scheme := range []string{"HTTPS://", "HtTpS://"} {
		st, err := store.Open("etcd", env.options(map[string]string{"endpoints": scheme + hostPort}))
		if err != nil {
			t.Errorf("Open of %s%s with the TLS files: %v", scheme, hostPort, err)
			continue
		}
		if _, err := st.Ranges().Next(t.Context(), "k", 1); err != nil {
			t.Errorf("Next through %s%s: %v", scheme, hostPort, err)
		}
		st.Close()

		o := env.options(map[string]string{"endpoints": scheme + hostPort})
		delete(o, "tls.caFile")
		delete(o, "tls.certFile")
		delete(o, "tls.keyFile")
		openFails(t, env, o, "certificate signed by unknown authority")
	}
	for _, eps := range []string{"HTTP://" + hostPort, "Http://" + hostPort + ",https://127.0.0.1:1", "HTTPS://" + hostPort + ",http://127.0.0.1:1"} {
		o := env.options(map[string]string{"endpoints": eps})
		if eps[4] == 's' || eps[4] == 'S' {
			delete(o, "tls.caFile")
			delete(o, "tls.certFile")
			delete(o, "tls.keyFile")
		}
		st, err := store.Open("etcd", o)
		if err == nil {
			st.Close()
			t.Errorf("Open of %s (TLS files: %v) succeeded; want it refused", eps, o["tls.caFile"] != "")
		} else if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), `"endpoints"`) {
			t.Errorf("Open of %s: %v; want ErrInvalidArgument naming endpoints", eps, err)
		}
	}
}

// TestSchemeCaseNoPasswordInPlaintext: the store's username and password,
// with an HTTPS:// endpoint in any case, never cross the network in
// plaintext: through a proxy that records what the client sends, to a
// plaintext member, Open fails (TLS to a member that speaks none) and the
// password is not among the bytes. The same through http:// sends it (so
// the recording sees a password when there is one to see).
func TestSchemeCaseNoPasswordInPlaintext(t *testing.T) {
	const password = "pw-Ex4mple-0f-a-s3cret"
	member := strings.TrimPrefix(sharedServer(t).Endpoints()[0], "http://")
	for _, scheme := range []string{"HTTPS://", "Https://", "http://"} {
		rec := newRecorder(t, member)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		st, err := store.OpenContext(ctx, "etcd", map[string]string{"endpoints": scheme + rec.addr(), "prefix": freshPrefix("scheme"),
			"username": "u", "password": password, "dialTimeout": "2s"})
		cancel()
		if st != nil {
			st.Close()
		}
		rec.close()
		sent := rec.bytes()
		t.Logf("%s: Open: %v; %d bytes sent", scheme, err, len(sent))
		if scheme == "http://" {
			if !bytes.Contains(sent, []byte(password)) {
				t.Errorf("through http:// the password was not among the %d bytes sent: the recording misses it", len(sent))
			}
			continue
		}
		if err == nil {
			t.Errorf("Open through %s to a plaintext member succeeded", scheme)
		}
		if bytes.Contains(sent, []byte(password)) {
			t.Errorf("through %s the password was sent in plaintext", scheme)
		}
		if len(sent) == 0 || sent[0] != 0x16 {
			t.Errorf("through %s the first byte sent is not a TLS handshake record's (%d bytes)", scheme, len(sent))
		}
	}
}

// recorder forwards connections to a server and records every byte the
// clients send.
type recorder struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	sent []byte
	open []net.Conn
}

func newRecorder(t *testing.T, target string) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.open = append(r.open, c, s)
			r.mu.Unlock()
			r.wg.Add(2)
			go func() { defer r.wg.Done(); io.Copy(c, s); c.Close() }()
			go func() { defer r.wg.Done(); io.Copy(tap{r, s}, c); s.Close() }()
		}
	}()
	t.Cleanup(r.close)
	return r
}

// tap records what a client sent, and forwards it to the server.
type tap struct {
	r *recorder
	s net.Conn
}

func (t tap) Write(p []byte) (int, error) {
	t.r.mu.Lock()
	t.r.sent = append(t.r.sent, p...)
	t.r.mu.Unlock()
	return t.s.Write(p)
}

func (r *recorder) addr() string { return r.ln.Addr().String() }

func (r *recorder) close() {
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.open {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.sent)
}
