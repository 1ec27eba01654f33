package dag

import (
	"path/filepath"
	"strings"
)

// RelPath is how a path enters keys, records and messages: relative to root (slash-separated) when
// p lies under it, else absolute. A path that cannot be made absolute is returned as given.
func RelPath(root, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	r, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(r, "..") {
		return abs
	}
	return filepath.ToSlash(r)
}
