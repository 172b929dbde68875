package zookeeper

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// handshake runs the TLS handshake on raw within ctx (connectionTimeout).
// Without tls.serverName, each server's certificate is checked against the
// host of its address in connectString.
func (d *dialer) handshake(ctx context.Context, raw net.Conn, address string) (net.Conn, error) {
	cfg := d.tls
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			host = address
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("TLS handshake with %s failed (is it the server's TLS port, secureClientPort?): %w", address, err)
	}
	return c, nil
}
