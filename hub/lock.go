package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on path, waiting (and watching ctx) while another goroutine or
// process holds it. The holder removes the file before unlocking, so nothing is left behind; a
// waiter that locked a file already unlinked (or replaced) notices by comparing inodes and retries.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	wait := 5 * time.Millisecond
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			if samePath(f, path) {
				return func() {
					_ = os.Remove(path)
					_ = f.Close()
				}, nil
			}
			_ = f.Close()
			continue
		}
		_ = f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for lock %s (another download of the same file is running): %w", path, ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
}

// samePath reports whether the open file is still the one named path.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	if err != nil {
		return false
	}
	return os.SameFile(a, b)
}
