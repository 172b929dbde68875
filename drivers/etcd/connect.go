package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosid-go/store/driver"
)

// This file is how the store's client connects, and what it says when it
// cannot: every connection's failures (a refused TLS handshake, a closed
// connection) are recorded for the errors and events, Open takes at most
// dialTimeout, and a TLS or password failure is said in
// the words of the option to fix.

// errOpenBound is the cause of Open's context ending at dialTimeout.
var errOpenBound = errors.New("dialTimeout passed")

// awaitReady waits until the client's connection is ready, within ctx
// (which ends at dialTimeout, errOpenBound, or the caller's), and returns
// at once on a TLS failure (a wrong CA or a refused certificate does not
// heal by dialling again).
func (s *etcdStore) awaitReady(ctx context.Context) error {
	conn := s.cli.ActiveConnection()
	start := time.Now()
	conn.Connect()
	for st := conn.GetState(); st != connectivity.Ready; st = conn.GetState() {
		if st == connectivity.TransientFailure {
			if err := s.lastFailure(start); err != nil && errors.As(err, new(*tlsError)) {
				return fmt.Errorf("no connection to etcd at %s: %w: %w", strings.Join(s.cfg.endpoints, ","), err, driver.ErrUnavailable)
			}
		}
		if !conn.WaitForStateChange(ctx, st) {
			bound := context.Cause(ctx) == errOpenBound
			why := fmt.Sprintf("within dialTimeout %v", s.cfg.dialTimeout)
			if !bound {
				why = "before the context ended"
			}
			msg := fmt.Sprintf("no connection to etcd at %s %s (state %v)", strings.Join(s.cfg.endpoints, ","), why, st)
			if err := s.lastFailure(start); err != nil {
				msg += "; last failure: " + err.Error()
			}
			if !bound {
				return fmt.Errorf("%s: %w: %w", msg, driver.ErrUnavailable, ctx.Err())
			}
			return fmt.Errorf("%s: %w", msg, driver.ErrUnavailable)
		}
	}
	return nil
}

// dialOptions are the client's, after the tests' own (s.dialOpt).
//
// The transport credentials make the client's connections report their
// failures to the store. They replace the client's own choice, made as
// this one, on the scheme url.Parse read (HTTPS:// is https): TLS to every
// endpoint when they are https:// or TLS files are given (parseOptions
// refuses them with http://, and mixed schemes), plaintext otherwise.
//
// No idle timeout: gRPC would close an unused connection after 30 minutes
// and go idle, which the connection events could not tell from a lost
// connection (events.go).
func (s *etcdStore) dialOptions() []grpc.DialOption {
	c := &watchedCreds{TransportCredentials: insecure.NewCredentials(), s: s}
	if s.cfg.secure {
		c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		if s.cfg.tls != nil {
			c.tls = s.cfg.tls
		}
		c.TransportCredentials = credentials.NewTLS(c.tls)
	}
	return append(slices.Clip(s.dialOpt),
		grpc.WithTransportCredentials(c),
		grpc.WithIdleTimeout(0),
		grpc.WithChainUnaryInterceptor(s.attemptInterceptor))
}

// watchedCreds is gRPC's TLS or plaintext, recording failed handshakes and
// the failures of the connections' reads (a closed connection), and a
// member's request for a client certificate the store has none of: with
// TLS 1.3 the handshake succeeds, and the member's refusal comes in an
// alert on the first read after it, which may be lost to a reset.
type watchedCreds struct {
	credentials.TransportCredentials
	s   *etcdStore
	tls *tls.Config // nil: plaintext
}

func (c *watchedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	inner, noCert := c.TransportCredentials, false
	if c.tls != nil {
		// Go's own choice (a certificate from a CA the member accepts,
		// else none), noted for this connection.
		cfg := c.tls.Clone()
		certs := cfg.Certificates
		cfg.Certificates = nil
		cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			for i := range certs {
				if cri.SupportsCertificate(&certs[i]) == nil {
					return &certs[i], nil
				}
			}
			noCert = true
			return &tls.Certificate{}, nil
		}
		inner = credentials.NewTLS(cfg)
	}
	conn, info, err := inner.ClientHandshake(ctx, authority, raw)
	if err != nil {
		c.s.failed(c.s.tlsError(authority, err))
		return nil, nil, err
	}
	if noCert {
		// etcd asks only with --client-cert-auth, which requires one.
		c.s.failed(c.s.tlsError(authority, errNoClientCert))
	}
	return &watchedConn{Conn: conn, s: c.s, server: authority, noCert: noCert}, info, nil
}

func (c *watchedCreds) Clone() credentials.TransportCredentials {
	return &watchedCreds{TransportCredentials: c.TransportCredentials.Clone(), s: c.s, tls: c.tls}
}

// errNoClientCert is the failure of a connection whose server asked for a
// client certificate the store has none of.
var errNoClientCert = errors.New("the server asked for a client certificate, and none given is from a CA it accepts")

type watchedConn struct {
	net.Conn
	s      *etcdStore
	server string
	noCert bool // errNoClientCert is recorded: a reset that follows says less
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		if tlsAlert(err) != "" {
			c.s.failed(c.s.tlsError(c.server, err))
		} else if !c.noCert {
			c.s.failed(fmt.Errorf("connection to %s: %w", c.server, err))
		}
	}
	return n, err
}

// tlsError is a TLS failure with a member, said in an operator's words:
// which option to look at.
type tlsError struct {
	server   string
	err      error
	haveCert bool // tls.certFile is set
}

func (s *etcdStore) tlsError(server string, err error) *tlsError {
	return &tlsError{server: server, err: err, haveCert: s.cfg.tls != nil && len(s.cfg.tls.Certificates) > 0}
}

func (e *tlsError) Unwrap() error { return e.err }

func (e *tlsError) Error() string {
	var unknown x509.UnknownAuthorityError
	var name x509.HostnameError
	var invalid x509.CertificateInvalidError
	var hint string
	switch {
	case errors.As(e.err, &unknown):
		hint = "the server's certificate is not signed by a CA of tls.caFile (or the system's, without it)"
	case errors.As(e.err, &name):
		hint = "the server's certificate is not for the name or address in endpoints"
	case errors.As(e.err, &invalid):
		hint = "the server's certificate is not valid (expired, or not for a server)"
	case (errors.Is(e.err, errNoClientCert) || tlsAlert(e.err) == "certificate required") && e.haveCert:
		// Go's client sends only a certificate issued by a CA the server
		// named as acceptable.
		hint = "the server requires a client certificate issued by its CA, and the one of tls.certFile is not"
	case errors.Is(e.err, errNoClientCert) || tlsAlert(e.err) == "certificate required":
		hint = "the server requires a client certificate: set tls.certFile and tls.keyFile"
	case tlsAlert(e.err) != "":
		hint = "the server refused the client certificate of tls.certFile"
	default:
		hint = "TLS handshake failed"
	}
	return fmt.Sprintf("TLS with %s: %s: %v", e.server, hint, e.err)
}

// tlsAlert returns the alert of a TLS failure the server reported about
// the client's certificate, or "". crypto/tls gives remote alerts only as
// text ("remote error: tls: bad certificate").
func tlsAlert(err error) string {
	msg := err.Error()
	for _, a := range []string{"certificate required", "bad certificate", "unknown certificate authority",
		"unsupported certificate", "certificate revoked", "certificate expired", "certificate unknown"} {
		if strings.Contains(msg, "remote error: tls: "+a) {
			return a
		}
	}
	return ""
}

// clientError is the failure of making the client, which, given a username,
// authenticates at once (bounded by dialTimeout): a refused password names
// the option, without its value.
func (s *etcdStore) clientError(err error) error {
	eps := strings.Join(s.cfg.endpoints, ",")
	if errors.Is(err, rpctypes.ErrAuthFailed) {
		return optionError("password", "", true,
			fmt.Sprintf("etcd at %s refused user %q with this password (%v)", eps, s.cfg.username, err))
	}
	msg := fmt.Sprintf("etcd client for %s: %v", eps, err)
	if f := s.lastFailure(time.Time{}); f != nil {
		msg += "; last failure: " + f.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", msg, driver.ErrUnavailable)
	}
	return errors.New(msg)
}
