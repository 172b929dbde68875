package sqlite

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// stranger returns a process other than this one that holds a lock on
// the file but none on its -shm file, or 0. Every process using a file in
// WAL mode holds both; one that holds only the file uses another -shm:
// it has the file open under another name (renamed, or a hard link
// removed, while in use), its newest commits in a -wal this store would
// never read, or its -shm was deleted under it. Read from /proc/locks,
// which lists every lock on the host.
func stranger(file, shm fileID) (int, error) {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, err
	}
	key := func(id fileID) string {
		return fmt.Sprintf("%02x:%02x:%d", unix.Major(id.dev), unix.Minor(id.dev), id.ino)
	}
	fk, sk := key(file), key(shm)
	onFile, onShm := map[int]bool{}, map[int]bool{}
	me := os.Getpid()
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// "1: POSIX  ADVISORY  READ 1234 fd:01:9983338 1073741826 1073742335";
		// a blocked request has "->" after the number.
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] == "->" || f[1] != "POSIX" {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil || pid == me {
			continue
		}
		switch f[5] {
		case fk:
			onFile[pid] = true
		case sk:
			onShm[pid] = true
		}
	}
	for pid := range onFile {
		if !onShm[pid] {
			return pid, nil
		}
	}
	return 0, sc.Err()
}
