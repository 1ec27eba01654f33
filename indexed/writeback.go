package indexed

import "os"

// writebackEvery is how much .bin data may be written before the writer asks
// the kernel to start writing it to disk. Finalize must fsync the whole file
// before publishing it; starting writeback as the data arrives overlaps that
// disk work with encoding, so the final fsync waits only for the tail.
const writebackEvery = 1 << 20

// writebackFile is the .bin file with early writeback.
type writebackFile struct {
	f               *os.File
	written, queued int64
}

func (w *writebackFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	if err == nil && w.written-w.queued >= writebackEvery {
		startWriteback(w.f, w.queued, w.written-w.queued)
		w.queued = w.written
	}
	return n, err
}
