package indexed

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback queues the range for writeback without waiting for it
// (sync_file_range with SYNC_FILE_RANGE_WRITE). It is only a hint: durability
// still comes from the fsync in Finalize, so an error here is ignored.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
