package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/magefile/mage/mg"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/tasks/sharedstore"
	"github.com/rivalbench/rival/tasks/training"
	"github.com/rivalbench/rival/tasks/upkeep"
)

// rivalVersion is Rival's own version, recorded in every result.
const rivalVersion = "0.1.0"

// Workspace is one invocation's view of the project: its configuration,
// cache and runner.
type Workspace struct {
	root   string
	config *config
	cache  *cache.Cache
	runner *dag.Runner
	out    io.Writer
	// env are the non-fingerprinted settings (settings.go) this invocation reads.
	env environment

	// remote is RIVAL_STORE as the runner's shared cache (package tasks/sharedstore); nil when
	// not set.
	remote *sharedstore.Remote

	// madeDirs are the folder settings (OUTPUT_DIR, DATA_DIR) this invocation created in
	// markOwnDirs: purge says an empty one of them did not exist rather than that it removed it.
	madeDirs map[string]bool

	// notes remembers what the runs have explained (which precision CPU runs train in, and
	// why), so an explanation appears once per invocation, not once per run.
	notes training.Notes
}

// openWorkspace loads config.env and secrets.env from root and opens the
// cache ($RIVAL_CACHE or the user cache directory), with settings and
// config overrides from the process environment.
func openWorkspace(root string, verbose bool, out io.Writer) (*Workspace, error) {
	return openWorkspaceWith(root, processEnvironment(), verbose, out)
}

// openWorkspaceWith is OpenWorkspace with settings and config overrides
// read from s.
func openWorkspaceWith(root string, s environment, verbose bool, out io.Writer) (*Workspace, error) {
	cfgPath := s.configPath()
	if cfgPath == "" {
		cfgPath = filepath.Join(root, "config.env")
	}
	cfg, err := loadConfig(cfgPath, filepath.Join(root, "secrets.env"), s.Lookup)
	if err != nil {
		return nil, err
	}
	if v := s.cacheLink(); v != "" && v != "copy" {
		return nil, fmt.Errorf("RIVAL_CACHE_LINK=%q: the only value is `copy` (store dataset files as full copies); unset it to share them with the cache", v)
	}
	if _, err := s.powerInterval(); err != nil {
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
		root:   root,
		config: cfg,
		cache:  c,
		runner: &dag.Runner{Cache: c, Root: root, Jobs: cfg.int("JOBS"), Verbose: verbose, Out: out},
		out:    out,
		env:    s,
	}
	if w.remote, err = sharedstore.New(w.storeOptions()); err != nil {
		return nil, err
	}
	if w.remote != nil {
		w.runner.Remote = w.remote
	}
	return w, nil
}

// path resolves a config directory key (DATA_DIR, OUTPUT_DIR) against the
// workspace root.
func (w *Workspace) path(key string, elem ...string) string {
	base := w.config.get(key)
	if !filepath.IsAbs(base) {
		base = filepath.Join(w.root, base)
	}
	return filepath.Join(append([]string{base}, elem...)...)
}

// printf writes a message for the user (standard error).
func (w *Workspace) printf(format string, args ...any) { fmt.Fprintf(w.out, format, args...) }

// Main runs one mage target: it opens the workspace in the current
// directory, cancels on Ctrl-C or SIGTERM, and always ends with the
// `tasks: R run, C cached` line. A failure is told first (`Error: ...`),
// then the tasks line, and the process exits (see end).
func Main(ctx context.Context, fn func(ctx context.Context, w *Workspace) error) error {
	ctx, stop, caught := handleSignals(ctx, os.Stderr, processEnvironment().stopGrace())
	root, err := os.Getwd()
	if err != nil {
		return end(os.Stderr, err, "tasks: 0 run, 0 cached", stop, caught)
	}
	summary, err := runIn(ctx, root, mg.Verbose(), os.Stderr, fn)
	return end(os.Stderr, err, summary, stop, caught)
}

// runIn is one target in the workspace at root, between Main's signal handling and its exit
// status: the door the docs examples test runs targets through. It returns the tasks line.
func runIn(ctx context.Context, root string, verbose bool, out io.Writer, fn func(ctx context.Context, w *Workspace) error) (string, error) {
	w, err := openWorkspace(root, verbose, out)
	if err != nil {
		return "tasks: 0 run, 0 cached", err
	}
	w.cache.Context = ctx // a cache read in progress stops on Ctrl-C or SIGTERM
	w.markOwnDirs()
	err = fn(ctx, w)
	return w.runner.Summary(), err
}

// exit ends the process after a failed target; a variable so that a test
// can see the status without ending.
var exit = os.Exit

// end closes a target: on success it prints the tasks line and returns nil.
// On failure it prints `Error: <err>` and then the tasks line, in the
// order a reader scans a failed run, and exits with the shell's status:
// 128+n when signal n stopped the target (130 for Ctrl-C), the error's own
// ExitStatus when it has one (mg.Fatal), else 1. Exiting here, not in
// mage's main, is what puts the error above the tasks line: mage would
// print it after whatever the target printed last.
func end(out io.Writer, err error, line string, stop func(), caught func() os.Signal) error {
	stop()
	if err == nil {
		fmt.Fprintln(out, line)
		return nil
	}
	msg := err.Error()
	s := caught()
	if s != nil && errors.Is(err, context.Canceled) {
		msg = "stopped by " + sigName(s)
	}
	fmt.Fprintf(out, "Error: %s\n%s; failed\n", msg, line)
	code := 1
	var st interface{ ExitStatus() int }
	if s != nil {
		code = exitCode(s)
	} else if errors.As(err, &st) && st.ExitStatus() != 0 {
		code = st.ExitStatus()
	}
	exit(code)
	return err
}

// Bare runs a target that needs neither config.env nor the cache (extract:
// its environment variables describe a log, not this workspace's
// configuration), ending with the same summary line.
func Bare(ctx context.Context, fn func(ctx context.Context) error) error {
	// Nothing to clean up but open files: a short grace.
	ctx, stop, caught := handleSignals(ctx, os.Stderr, 2*time.Second)
	return end(os.Stderr, fn(ctx), "tasks: 0 run, 0 cached", stop, caught)
}

// markOwnDirs creates OUTPUT_DIR and DATA_DIR when they do not exist yet,
// and marks them as Rival's. Every target calls it before it runs, so no
// other code path creates either directory unmarked.
func (w *Workspace) markOwnDirs() {
	for _, k := range []string{"OUTPUT_DIR", "DATA_DIR"} {
		if upkeep.MakeOwnDir(w.path(k), k, w.root) {
			if w.madeDirs == nil {
				w.madeDirs = map[string]bool{}
			}
			w.madeDirs[k] = true
		}
	}
}

// storeOptions are RIVAL_STORE and its settings, the cache and where messages go (package
// tasks/sharedstore).
func (w *Workspace) storeOptions() sharedstore.Options {
	return sharedstore.Options{Location: w.env.store(), Insecure: w.env.storeInsecure(), CAFile: w.env.storeCA(),
		Timeout: w.env.storeTimeout(), Cache: w.cache, Out: w.out}
}
