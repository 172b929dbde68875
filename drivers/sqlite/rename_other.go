//go:build !linux

package sqlite

// renameNoReplace moves a new file into place unless path exists. Without
// Linux's renameat2 it takes a hard link and removes the old name: another
// process opening the file in between sees two links and refuses to open.
func renameNoReplace(tmp, path string) error { return linkNoReplace(tmp, path) }
