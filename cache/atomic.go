package cache

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// WriteAtomic creates path through a temporary file in the same directory:
// the content is written by fill, synced, and renamed into place, so readers
// see either the old file or the whole new one, never a torn write. On any
// error the temporary file is removed and path is untouched.
func WriteAtomic(path string, perm os.FileMode, fill func(w *bufio.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, TempPattern(filepath.Base(path)))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = fill(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	notePublishedInfo(path, fi)
	syncDir(dir)
	return nil
}

// WriteFileAtomic is WriteAtomic for content already in memory.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomic(path, perm, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// syncDir makes a rename durable; failures are ignored because some
// filesystems do not support syncing directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
