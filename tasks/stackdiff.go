package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/stackdiff"
)

// StackDiffTarget is stack:diff FRAMEWORK OLD NEW: what changed between two upstream trees of one
// framework that touches Rival's launches, as Markdown on out. The extractors run with RIVAL_PYTHON
// (default python3) from the repository at repo; STACK_DIFF_JSON names a file for the whole report
// as JSON.
func StackDiffTarget(ctx context.Context, repo, framework, old, cur string, out io.Writer) error {
	ot, err := stackdiff.ParseTrees(framework, old)
	if err != nil {
		return err
	}
	nt, err := stackdiff.ParseTrees(framework, cur)
	if err != nil {
		return err
	}
	rep, err := stackdiff.Run(ctx, framework, ot, nt, stackdiff.Options{Repo: repo, Python: os.Getenv("RIVAL_PYTHON"), Build: frameworks.Build})
	if err != nil {
		return err
	}
	if p := os.Getenv("STACK_DIFF_JSON"); p != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("stack:diff: %w", err)
		}
		if err := cache.WriteFileAtomic(filepath.Clean(p), append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("stack:diff: STACK_DIFF_JSON=%s: %w", p, err)
		}
	}
	_, err = io.WriteString(out, rep.Markdown())
	return err
}
