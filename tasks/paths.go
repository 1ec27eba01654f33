package tasks

import (
	"path/filepath"
	"strings"
)

// relPath is p relative to root when p lies under it.
func relPath(root, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	r, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(r, "..") {
		return abs, nil
	}
	return filepath.ToSlash(r), nil
}
