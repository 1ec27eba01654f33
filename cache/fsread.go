package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Size limits for the files Rival reads whole, by kind. Each is far above
// what Rival writes and far below what would exhaust memory, so a planted or
// damaged file is an error naming it, never an 8 GB allocation.
const (
	// LimitRecord bounds an action record and a task's latest inputs: key
	// parts, output lists and a small summary.
	LimitRecord = 16 << 20
	// LimitStatEntry bounds one stat-cache entry (a path, a stat, a digest).
	LimitStatEntry = 64 << 10
	// LimitManifest bounds a dataset manifest or a result's JSON.
	LimitManifest = 16 << 20
	// LimitConfig bounds a configuration or marker file.
	LimitConfig = 1 << 20
	// LimitBlobInMemory bounds a blob read into memory whole (ReadBlob);
	// large outputs are streamed by Materialize instead.
	LimitBlobInMemory = 256 << 20
)

// ErrTooLarge and ErrNotRegular are the refusals of ReadFileLimit.
var (
	ErrTooLarge   = errors.New("file is larger than Rival ever writes for its kind")
	ErrNotRegular = errors.New("not a regular file")
)

// OpenRegular opens path for reading and refuses anything but a regular
// file after symlinks are followed (a FIFO, a device such as /dev/zero, a
// directory), without blocking on a FIFO.
func OpenRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%s); remove it or point Rival at a file", path, ErrNotRegular, fi.Mode().Type())
	}
	return f, fi, nil
}

// ReadFileLimit reads the regular file at path whole, refusing one larger
// than limit bytes or one that is not a regular file, and stopping when ctx
// ends. Errors name the file; a missing file wraps fs.ErrNotExist.
func ReadFileLimit(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes, limit %d); remove it and run again", path, ErrTooLarge, fi.Size(), limit)
	}
	return readLimit(ctx, path, f, fi.Size(), limit)
}

// ReadLimit reads r to its end like io.ReadAll, refusing more than limit
// bytes and stopping when ctx ends; name is what errors call r.
func ReadLimit(ctx context.Context, name string, r io.Reader, limit int64) ([]byte, error) {
	return readLimit(ctx, name, r, 0, limit)
}

func readLimit(ctx context.Context, name string, r io.Reader, hint, limit int64) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	const chunk = 1 << 20
	buf := make([]byte, 0, min(hint, limit)+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(cap(buf), len(buf)+chunk)
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("%s: %w (over %d bytes); remove it and run again", name, ErrTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
}

// IsReadOnly reports whether err says the cache cannot be written: a
// read-only filesystem or a folder the user may not write.
func IsReadOnly(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// IsNoSpace reports whether err says the cache's disk or quota is full.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
