package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Cache is one cache directory. It is safe for concurrent use by many
// goroutines and many processes.
type Cache struct {
	Dir string
	// Warn receives problems the cache recovers from by itself (a corrupt
	// blob treated as absent, say). Nil discards them.
	Warn func(msg string)
	// Context, when set, ends the cache's reads: a record, entry or blob
	// being read or restored stops with its error once Context ends (on
	// Ctrl-C or SIGTERM). Nil reads to the end.
	Context context.Context

	fileReads atomic.Int64 // files opened to be hashed (not blobs)
	noMarks   atomic.Bool  // the file system keeps no blob marks (link.go)
}

// ErrNotFound means a blob or record is absent (or was corrupt and dropped).
var ErrNotFound = errors.New("not in cache")

func (c *Cache) warn(format string, args ...any) {
	if c.Warn != nil {
		c.Warn(fmt.Sprintf(format, args...))
	}
}

func shard(root string, d Digest) string {
	s := d.String()
	return filepath.Join(root, s[:2], s)
}

func (c *Cache) blobPath(d Digest, compressed bool) string {
	p := shard(filepath.Join(c.Dir, "blobs"), d)
	if compressed {
		p += ".zst"
	}
	return p
}

func (c *Cache) dropCorrupt(d Digest, cause error) {
	why := "content does not match its digest"
	if cause != nil {
		why = cause.Error()
	}
	c.warn("cache: blob %s is corrupt (%s); dropped, it will be rebuilt", d.Short(), why)
	os.Remove(c.blobPath(d, false))
	os.Remove(c.blobPath(d, true))
}
