package tasks

import (
	"path/filepath"

	"github.com/rivalbench/rival/dag"
)

func rel(root, p string) string { return dag.RelPath(root, p) }

// absPath is p made absolute against the current directory, or p itself
// when the current directory cannot be read: a target's file arguments
// name files as the shell that typed them sees them.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
