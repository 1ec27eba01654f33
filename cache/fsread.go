package cache

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/rivalbench/rival/safefile"
)

// Size limits for the files the cache reads whole, by kind (package
// safefile holds them with the limits of every other kind Rival reads).
const (
	// LimitRecord bounds an action record and a task's latest inputs.
	LimitRecord = safefile.LimitRecord
	// LimitStatEntry bounds one stat-cache entry.
	LimitStatEntry = safefile.LimitStatEntry
	// LimitManifest bounds a dataset manifest.
	LimitManifest = safefile.LimitManifest
	// LimitConfig bounds a configuration or marker file.
	LimitConfig = safefile.LimitConfig
	// LimitBlobInMemory bounds a blob read into memory whole (ReadBlob);
	// large outputs are streamed by Materialize instead.
	LimitBlobInMemory = safefile.LimitBlobInMemory
)

// ErrTooLarge and ErrNotRegular are the refusals of ReadFileLimit.
var (
	ErrTooLarge   = safefile.ErrTooLarge
	ErrNotRegular = safefile.ErrNotRegular
)

// OpenRegular is safefile.Open: it opens path for reading and refuses
// anything but a regular file, without blocking on a FIFO.
func OpenRegular(path string) (*os.File, os.FileInfo, error) { return safefile.Open(path) }

// ReadFileLimit is safefile.ReadFile: the regular file at path, whole, at
// most limit bytes, stopping when ctx ends.
func ReadFileLimit(ctx context.Context, path string, limit int64) ([]byte, error) {
	return safefile.ReadFile(ctx, path, limit)
}

// ReadLimit is safefile.ReadAll: r to its end, at most limit bytes,
// stopping when ctx ends; name is what errors call r.
func ReadLimit(ctx context.Context, name string, r io.Reader, limit int64) ([]byte, error) {
	return safefile.ReadAll(ctx, name, r, limit)
}

// readCtx returns the context the cache's reads stop with.
func (c *Cache) readCtx() context.Context {
	if c.Context == nil {
		return context.Background()
	}
	return c.Context
}

// interrupted reports whether err is a read cut short by its context
// (Ctrl-C, SIGTERM), which says nothing about the file read.
func interrupted(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
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
