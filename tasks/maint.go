package tasks

import (
	"context"
	"os"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/tasks/upkeep"
)

// The upkeep targets: the work is in package upkeep; here the workspace
// hands it the cache, the root, the configured folders and limits.

// CacheStats prints what the cache holds.
func (w *Workspace) CacheStats() error { return upkeep.CacheStats(os.Stdout, w.cache) }

// CacheTrim trims the cache to RIVAL_CACHE_MAX (default 50GiB) and drops
// entries unused for RIVAL_CACHE_MAX_AGE (default 30d).
func (w *Workspace) CacheTrim(ctx context.Context) error {
	return upkeep.CacheTrim(ctx, w.out, w.cache, w.env.cacheMax(), w.env.cacheMaxAge())
}

// CacheVerify rehashes everything and fails if anything was corrupt.
func (w *Workspace) CacheVerify(ctx context.Context) error {
	return upkeep.CacheVerify(ctx, w.out, w.cache)
}

// Purge removes OUTPUT_DIR, and DATA_DIR too when data is true, when
// upkeep.Purge finds them Rival's own; the cache stays.
func (w *Workspace) Purge(data bool) error {
	keys := []string{"OUTPUT_DIR"}
	if data {
		keys = append(keys, "DATA_DIR")
	}
	folders := make([]upkeep.Folder, len(keys))
	for i, k := range keys {
		folders[i] = upkeep.Folder{Key: k, Value: w.config.get(k), Path: w.path(k), Fresh: w.madeDirs[k]}
	}
	return upkeep.Purge(w.out, w.root, w.cache.Dir, folders)
}

// wrapTask zips OUTPUT_DIR with a MANIFEST.json into rival-results-HOST.zip
// beside it (upkeep.WrapTask).
func (w *Workspace) wrapTask() (*dag.Task, string, error) {
	return upkeep.WrapTask(w.root, w.path("OUTPUT_DIR"), rivalVersion)
}

// WrapTarget implements wrap: it zips OUTPUT_DIR with every result's
// provenance (wrapTask) and prints where the zip is.
func (w *Workspace) WrapTarget(ctx context.Context) error {
	t, zipPath, err := w.wrapTask()
	if err != nil {
		return err
	}
	if err := w.runner.Run(ctx, t); err != nil {
		return err
	}
	w.printf("wrap: %s\n", zipPath)
	return nil
}
