package tasks

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/magefile/mage/mg"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
)

// Version is Rival's own version, recorded in every result.
const Version = "0.1.0"

// Workspace is one invocation's view of the project: its configuration,
// cache and runner.
type Workspace struct {
	Root   string
	Config *Config
	Cache  *cache.Cache
	Runner *dag.Runner
	Out    io.Writer
	// Settings are the non-fingerprinted settings (settings.go) this invocation reads.
	Settings Settings

	// remote is RIVAL_STORE as the runner's shared cache (store.go); nil when not set.
	remote *storeRemote

	// precisionSaid remembers which CPU precisions this workspace has explained, so the
	// explanation appears once per invocation, not once per run.
	precisionSaid sync.Map
}

// OpenWorkspace loads config.env and secrets.env from root and opens the
// cache ($RIVAL_CACHE or the user cache directory), with settings and
// config overrides from the process environment.
func OpenWorkspace(root string, verbose bool, out io.Writer) (*Workspace, error) {
	return OpenWorkspaceWith(root, EnvSettings(), verbose, out)
}

// OpenWorkspaceWith is OpenWorkspace with settings and config overrides
// read from s.
func OpenWorkspaceWith(root string, s Settings, verbose bool, out io.Writer) (*Workspace, error) {
	cfgPath := s.ConfigPath()
	if cfgPath == "" {
		cfgPath = filepath.Join(root, "config.env")
	}
	cfg, err := LoadConfig(cfgPath, filepath.Join(root, "secrets.env"), s.Lookup)
	if err != nil {
		return nil, err
	}
	dir, err := cache.DefaultDir()
	if err != nil {
		return nil, err
	}
	c, err := cache.Open(dir)
	if err != nil {
		return nil, err
	}
	c.Warn = func(msg string) { fmt.Fprintln(out, "warning:", msg) }
	w := &Workspace{
		Root:     root,
		Config:   cfg,
		Cache:    c,
		Runner:   &dag.Runner{Cache: c, Root: root, Jobs: cfg.Int("JOBS"), Verbose: verbose, Out: out},
		Out:      out,
		Settings: s,
	}
	if w.remote, err = newStoreRemote(w); err != nil {
		return nil, err
	}
	if w.remote != nil {
		w.Runner.Remote = w.remote
	}
	return w, nil
}

// Path resolves a config directory key (DATA_DIR, OUTPUT_DIR) against the
// workspace root.
func (w *Workspace) Path(key string, elem ...string) string {
	base := w.Config.Get(key)
	if !filepath.IsAbs(base) {
		base = filepath.Join(w.Root, base)
	}
	return filepath.Join(append([]string{base}, elem...)...)
}

// Printf writes a message for the user (standard error).
func (w *Workspace) Printf(format string, args ...any) { fmt.Fprintf(w.Out, format, args...) }

// Main runs one mage target: it opens the workspace in the current
// directory, cancels on Ctrl-C or SIGTERM, and always ends with the
// `tasks: R run, C cached` line.
func Main(ctx context.Context, fn func(ctx context.Context, w *Workspace) error) error {
	ctx, stop := handleSignals(ctx, os.Stderr, EnvSettings().StopGrace())
	defer stop()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	w, err := OpenWorkspace(root, mg.Verbose(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tasks: 0 run, 0 cached; failed")
		return err
	}
	w.Cache.Context = ctx // a cache read in progress stops on Ctrl-C or SIGTERM
	w.markOwnDirs()
	err = fn(ctx, w)
	line := w.Runner.Summary()
	if err != nil {
		line += "; failed"
	}
	fmt.Fprintln(os.Stderr, line)
	return err
}

// Bare runs a target that needs neither config.env nor the cache (extract:
// its environment variables describe a log, not this workspace's
// configuration), ending with the same summary line.
func Bare(ctx context.Context, fn func(ctx context.Context) error) error {
	// Nothing to clean up but open files: a short grace.
	ctx, stop := handleSignals(ctx, os.Stderr, 2*time.Second)
	defer stop()
	err := fn(ctx)
	line := "tasks: 0 run, 0 cached"
	if err != nil {
		line += "; failed"
	}
	fmt.Fprintln(os.Stderr, line)
	return err
}
