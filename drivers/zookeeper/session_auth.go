package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// addAuth sends the auth entries on the store's first session, within ctx
// (what is left of blockUntilConnectedWait). go-zookeeper remembers each
// entry the server accepted and sends it again after every reconnect,
// before any other request, so the store's requests always carry it.
// Errors name the scheme, never the credentials.
func (s *session) addAuth(ctx context.Context, entries []authEntry) error {
	for _, a := range entries {
		for {
			_, err := call(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.AddAuth(a.scheme, a.cred) })
			if err == nil {
				break
			}
			switch {
			case errors.Is(err, zk.ErrAuthFailed):
				return fmt.Errorf("zookeeper: the server rejected %v of the auth option (an unknown scheme, or credentials it refuses): %w", a, err)
			case errors.Is(err, context.DeadlineExceeded):
				return fmt.Errorf("zookeeper: %v of the auth option: no answer within blockUntilConnectedWait: %w", a, err)
			case errors.Is(err, zk.ErrConnectionClosed):
				// The connection dropped before the answer; the session
				// lives on, and the entry was not remembered: send it again.
				continue
			default:
				return fmt.Errorf("zookeeper: %v of the auth option: %w", a, err)
			}
		}
	}
	return nil
}
