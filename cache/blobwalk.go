package cache

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// blobName is a file under blobs/ as its name describes it, without its stat.
type blobName struct {
	digest Digest
	named  bool // the file is named by a digest (not debris or a stranger)
	path   string
}

// walkBlobs is the one walk of the blob tree: it calls f with each file
// under blobs/ as its name describes it, and its directory entry. Nothing
// has been stat'ed: Verify, which reads each file anyway, never pays for
// one, and Stats and Trim ask the entry for the size and time they need.
func (c *Cache) walkBlobs(f func(b blobName, de fs.DirEntry)) error {
	root := filepath.Join(c.Dir, "blobs")
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			return nil
		}
		d, err := parseDigestBytes(strings.TrimSuffix(de.Name(), ".zst"))
		f(blobName{digest: d, named: err == nil, path: p}, de)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list blobs in %s: %w", root, err)
	}
	return nil
}
