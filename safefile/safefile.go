// Package safefile reads the files Rival did not necessarily write itself:
// cache records and blobs, workspace configuration, result folders, the
// files cluster nodes leave behind and /sys. Each read is bounded by a
// limit fitting the file's kind, refuses anything but a regular file (a
// FIFO, a device such as /dev/zero behind a symlink, a directory) without
// blocking on it, and stops when its context ends. A file that may
// legitimately grow without bound (a training log, power samples) is
// streamed through Open and Reader instead of being read whole.
//
// The limits by kind are listed in docs/cache.md ("Hostile and broken
// files"); that table and the constants below change together.
package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Size limits for the files Rival reads whole, by kind. Each is far above
// what Rival or the tool that writes the file ever writes and far below
// what would exhaust memory, so a planted or damaged file is an error
// naming it, never an 8 GB allocation.
const (
	// LimitRecord bounds a cache action record and a task's latest
	// inputs: key parts, output lists and a small summary.
	LimitRecord = 16 << 20
	// LimitStatEntry bounds one stat-cache entry (a path, a stat, a digest).
	LimitStatEntry = 64 << 10
	// LimitManifest bounds a dataset manifest.
	LimitManifest = 16 << 20
	// LimitConfig bounds a configuration or marker file: config.env,
	// secrets.env, .rival-dir, .dockerignore, the Docker client
	// configuration, a CA bundle, image and push records, a run's
	// record of what ran.
	LimitConfig = 1 << 20
	// LimitResult bounds one result JSON (and a log verified in memory).
	LimitResult = 256 << 20
	// LimitBlobInMemory bounds a cache blob read into memory whole; large
	// outputs are streamed instead.
	LimitBlobInMemory = 256 << 20
	// LimitTokenizer bounds a Hugging Face tokenizer.json (those of the
	// registry's models are a few to a few tens of megabytes).
	LimitTokenizer = 256 << 20
	// LimitNodeFile bounds a file a cluster node records about itself
	// (hostname, nvidia-smi CSV, amd-smi or rocm-smi JSON, image ID).
	LimitNodeFile = 16 << 20
	// LimitSampleIndex bounds one of the sample-order .npy index files
	// (8 bytes per document or sample: a 1 GiB file holds 134 million).
	LimitSampleIndex = 1 << 30
	// LimitSysfs bounds a kernel attribute under /sys or /proc (the
	// kernel serves at most a page for most; cpuinfo grows with cores).
	LimitSysfs = 4 << 20
)

// ErrTooLarge and ErrNotRegular are the refusals of ReadFile.
var (
	ErrTooLarge   = errors.New("file is larger than Rival ever reads for its kind")
	ErrNotRegular = errors.New("not a regular file")
)

// Open opens path for reading and refuses anything but a regular file
// after symlinks are followed (a FIFO, a device such as /dev/zero, a
// directory, a socket), without blocking on a FIFO. Errors name the file
// and say what to do; a missing file wraps fs.ErrNotExist.
func Open(path string) (*os.File, os.FileInfo, error) {
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
		return nil, nil, fmt.Errorf("%s: %w (%s); remove it or put a regular file there", path, ErrNotRegular, kind(fi.Mode()))
	}
	return f, fi, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// ReadFile reads the regular file at path whole, refusing one larger than
// limit bytes or one that is not a regular file, and stopping when ctx
// ends. Errors name the file; a missing file wraps fs.ErrNotExist. A file
// whose size the kernel does not report (most of /proc and /sys) is read
// up to limit.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes, limit %d); remove or replace it and run again", path, ErrTooLarge, fi.Size(), limit)
	}
	return readLimit(ctx, path, f, fi.Size(), limit)
}

// ReadAll reads r to its end like io.ReadAll, refusing more than limit
// bytes and stopping when ctx ends; name is what errors call r.
func ReadAll(ctx context.Context, name string, r io.Reader, limit int64) ([]byte, error) {
	return readLimit(ctx, name, r, 0, limit)
}

// chunk is how much is read between two looks at the context.
const chunk = 1 << 20

func readLimit(ctx context.Context, name string, r io.Reader, hint, limit int64) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
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
			return nil, fmt.Errorf("%s: %w (over %d bytes); remove or replace it and run again", name, ErrTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
}

// Reader returns r as a reader that fails with ctx's error once ctx ends,
// reading at most a megabyte between two looks at it: a stream of a long
// file (a log, a blob being restored) stops promptly on cancellation.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > chunk {
		p = p[:chunk]
	}
	return c.r.Read(p)
}
