package driver

import "context"

// BackupMarker is an optional capability of a store whose backup copies
// carry a mark (the SQLite driver's Backup writes it into the copy). A
// copy may be behind what its original handed out since it was taken, so a
// marked store is not a live store: it opens only for tools (OptionCreate
// false; with create it refuses to open, wrapping ErrSealed), and refuses
// with ErrSealed every write that hands something out or moves it (Next,
// Seal, Init, Acquire, Renew, Release, SealNamespace, Purge), until a
// restore has raised it past anything handed out since (RangeAdvancer and
// SlotSeeder, which only raise, work on it) and cleared the mark.
type BackupMarker interface {
	// BackupMark returns the mark, a description of what the store is a
	// copy of and when it was taken, or "" when the store is no backup.
	BackupMark(ctx context.Context) (string, error)
	// ClearBackupMark removes the mark: the store is live from then on.
	// Clearing a store without one changes nothing.
	ClearBackupMark(ctx context.Context) error
}
