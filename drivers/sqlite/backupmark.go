package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// A backup copy's mark is the cosid_meta row "backup", written by Backup
// into the copy before the copy takes its name (see driver.BackupMarker).

var _ driver.BackupMarker = (*driverStore)(nil)

// marked is set at open when the file carries the mark; the writes below
// then read it again (a restore may have cleared it since).
type marked struct{ on atomic.Bool }

func readMark(ctx context.Context, q sqlstore.Querier) (string, error) {
	var v string
	err := q.QueryRow(ctx, "SELECT value FROM cosid_meta WHERE name = 'backup'").Scan(&v)
	if errors.Is(err, sqlstore.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// BackupMark returns the mark, "" when the file is no backup copy.
func (s *driverStore) BackupMark(ctx context.Context) (string, error) {
	return readMark(ctx, s.Store.DB())
}

// ClearBackupMark makes a restored copy a live store.
func (s *driverStore) ClearBackupMark(ctx context.Context) error {
	_, err := s.Store.DB().Exec(ctx, "DELETE FROM cosid_meta WHERE name = 'backup'")
	if err == nil {
		s.mark.on.Store(false)
	}
	return err
}

// live refuses a write to a backup copy.
func (s *driverStore) live(ctx context.Context) error {
	if !s.mark.on.Load() {
		return nil
	}
	m, err := s.BackupMark(ctx)
	if err != nil {
		return err
	}
	if m == "" {
		s.mark.on.Store(false)
		return nil
	}
	return backupRefusal(s.guard.path, m)
}

func backupRefusal(path, mark string) error {
	return fmt.Errorf("sqlite %s is a backup copy (%s), which may be behind what its original handed out since: "+
		"it hands out nothing until `storectl restore` raises it past that (inspect it with storectl inspect): %w",
		path, mark, driver.ErrSealed)
}

// The writes a backup copy refuses (driver.BackupMarker); Advance and
// SeedSlot only raise, and go through.

func (s *driverStore) Next(ctx context.Context, key string, step int64) (int64, error) {
	if err := s.live(ctx); err != nil {
		return 0, err
	}
	return s.Store.Next(ctx, key, step)
}

func (s *driverStore) Seal(ctx context.Context, key string) (int64, error) {
	if err := s.live(ctx); err != nil {
		return 0, err
	}
	return s.Store.Seal(ctx, key)
}

func (s *driverStore) Init(ctx context.Context, key string, next int64) error {
	if err := s.live(ctx); err != nil {
		return err
	}
	return s.Store.Init(ctx, key, next)
}

func (s *driverStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if err := s.live(ctx); err != nil {
		return driver.Lease{}, err
	}
	return s.Store.Acquire(ctx, req)
}

func (s *driverStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := s.live(ctx); err != nil {
		return driver.Lease{}, err
	}
	return s.Store.Renew(ctx, l)
}

func (s *driverStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	if err := s.live(ctx); err != nil {
		return err
	}
	return s.Store.Release(ctx, l, used)
}

func (s *driverStore) SealNamespace(ctx context.Context, ns string) error {
	if err := s.live(ctx); err != nil {
		return err
	}
	return s.Store.SealNamespace(ctx, ns)
}

func (s *driverStore) KeepLayout(ctx context.Context, want driver.Namespace, layout string) (string, error) {
	if err := s.live(ctx); err != nil {
		return "", err
	}
	return s.Store.KeepLayout(ctx, want, layout)
}

func (s *driverStore) Purge(ctx context.Context) ([]string, error) {
	if err := s.live(ctx); err != nil {
		return nil, err
	}
	return s.Store.Purge(ctx)
}
