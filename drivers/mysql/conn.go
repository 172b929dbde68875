package mysql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// connector opens the pool's connections, each with the session settings
// the store needs (the package documentation's Server-side bounds).
type connector struct {
	c     driver.Connector
	setup []string
}

func newConnector(c *config) (*connector, error) {
	cfg := c.cfg.Clone()
	if cfg.DialFunc == nil && dialsItself(cfg.Net) {
		cfg.DialFunc = dial // cutconn.go
		if cfg.Logger == nil {
			cfg.Logger = mysql.NewConfig().Logger // the driver's default
		}
		cfg.Logger = quietLogger{cfg.Logger}
	}
	mc, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return &connector{c: mc, setup: sessionSetup(c.lockTimeout)}, nil
}

// seconds is d in whole seconds, rounded up, at least 1: the servers'
// timeouts are counted in seconds.
func seconds(d time.Duration) int64 { return max(1, int64((d+time.Second-1)/time.Second)) }

// sessionSetup are the statements each connection runs first. The
// /*M! ... */ part runs on MariaDB only: MySQL 8 has no
// idle_transaction_timeout and reads the part as a comment.
func sessionSetup(t time.Duration) []string {
	return []string{
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
		fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d, time_zone = '+00:00', "+
			"sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,ERROR_FOR_DIVISION_BY_ZERO' "+
			"/*M!, idle_transaction_timeout = %d */", seconds(t/2), seconds(t/4)),
	}
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	slot := &dialSlot{}
	conn, err := c.c.Connect(context.WithValue(ctx, dialSlotKey{}, slot))
	if err != nil {
		return nil, err
	}
	if slot.c != nil {
		conn = newCutConn(conn, slot.c)
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("mysql: the connection of %T cannot run statements", conn)
	}
	for _, q := range c.setup {
		if _, err := ex.ExecContext(ctx, q, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("mysql: session setup (%s): %w", q, err)
		}
	}
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return c.c.Driver() }
