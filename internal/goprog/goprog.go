// Package goprog builds the programs of Rival's own module that hold a heavy library (the
// Kubernetes client, the parquet reader, the plotting library) so that the targets need not link
// it: a target that needs one runs it, built with `go build` on first use into the cache's bin
// folder. go build relinks a program only when its source or Go changed, so a later build costs a
// second or two, and a target that never needs the library never compiles it.
package goprog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rivalbench/rival/cache"
)

// Program names one program of the module and how its messages speak of it.
type Program struct {
	// Package is its import path, Name its file's name.
	Package, Name string
	// Topic begins each message ("kube"); What is the program in words ("the Kubernetes client").
	Topic, What string
	// Holds names the library it holds, said while it compiles ("client-go").
	Holds string
	// FirstBuild is what its first build takes on a 2-core x86-64 machine whose build cache already
	// holds the targets' packages, said while it compiles ("3 minutes").
	FirstBuild string
}

// Helper is a Program built from Rival's source into BinDir.
type Helper struct {
	Program
	// Dir is a folder inside Rival's source (the workspace root): the build runs in the module that
	// holds it. When it holds none, the working directory's module is used.
	Dir string
	// BinDir is where the program is built: the bin folder of Rival's cache.
	BinDir string
	// Notice receives the one line said before the first, slow build; nil: standard error.
	Notice io.Writer
}

// built remembers the programs built by this process: one build per invocation is enough.
var built sync.Map

// Forget makes the next Build of path check the program again, as a later invocation would.
func Forget(path string) { built.Delete(path) }

// Path is where the program is built: one file per checkout (a short hash of Dir, else of the
// working directory), since checkouts at other versions share the cache and would otherwise
// rebuild over each other and run each other's program.
func (h *Helper) Path() string {
	dir := h.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(h.BinDir, h.Name+"-"+hex.EncodeToString(sum[:6]))
}

// Build builds the program if it is missing or stale and returns its path.
func (h *Helper) Build(ctx context.Context) (string, error) {
	out := h.Path()
	if h.BinDir == "" {
		return "", fmt.Errorf("%s: no folder to build %s (%s) in", h.Topic, h.What, h.Name)
	}
	if _, ok := built.Load(out); ok {
		// Stamped as used again, and built again when cache:trim removed it meanwhile.
		now := time.Now()
		if err := os.Chtimes(out, now, now); err == nil {
			return out, nil
		}
		built.Delete(out)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%s: %s is the program %s, which Rival builds with `go build -o %s %s`, and there is no `go` command on PATH (%v): put Go's bin folder on PATH", h.Topic, h.What, h.Name, out, h.Package, err)
	}
	mod, err := h.moduleDir(ctx, goCmd)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(h.BinDir, 0o755); err != nil {
		return "", fmt.Errorf("%s: building %s: %w", h.Topic, h.What, err)
	}
	// Two invocations building at once would write the same file.
	unlock, err := h.lock(ctx, out+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(out); errors.Is(err, fs.ErrNotExist) {
		w := h.Notice
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintf(w, "%s: compiling %s (%s, with %s) once into %s: this takes about %s on a 2-core machine; later runs reuse it\n", h.Topic, h.What, h.Package, h.Holds, out, h.FirstBuild)
	}
	args := []string{"build", "-buildvcs=false", "-o", out, h.Package}
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = mod
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: building %s failed: `go %s` in %s: %v\n%s", h.Topic, h.What, strings.Join(args, " "), mod, err, strings.TrimSpace(log.String()))
	}
	// The file's time is its last use, which cache:trim ages it by: go build leaves a current
	// program untouched.
	now := time.Now()
	if err := os.Chtimes(out, now, now); err != nil {
		return "", fmt.Errorf("%s: %w", h.Topic, err)
	}
	built.Store(out, struct{}{})
	return out, nil
}

// moduleDir is the root of the module the program is built in: Dir's, else the working
// directory's.
func (h *Helper) moduleDir(ctx context.Context, goCmd string) (string, error) {
	wd, _ := os.Getwd()
	for _, d := range []string{h.Dir, wd} {
		if d == "" {
			continue
		}
		cmd := exec.CommandContext(ctx, goCmd, "env", "GOMOD")
		cmd.Dir = d
		raw, err := cmd.Output()
		if gomod := strings.TrimSpace(string(raw)); err == nil && gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	return "", fmt.Errorf("%s: building %s (%s) needs Rival's source, and neither %s nor the working directory %s is inside a Go module: run `go run mage.go` in Rival's folder", h.Topic, h.What, h.Package, h.Dir, wd)
}

// lock takes the build's lock (cache.LockFile: an flock that outlives no process, and that
// cache:trim may remove while holding it), saying what it waited for when ctx ends first.
func (h *Helper) lock(ctx context.Context, path string) (unlock func(), err error) {
	l, err := cache.LockFile(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: waiting for another build of %s (%s): %w", h.Topic, h.What, path, ctx.Err())
		}
		return nil, fmt.Errorf("%s: building %s: %w", h.Topic, h.What, err)
	}
	return func() { l.Unlock() }, nil
}

// ErrorOf is the error of a program's run that failed: its standard error when it exited 1 having
// said why there (the programs say it in the words the in-process code used), else err with what
// it printed.
func (h *Helper) ErrorOf(ctx context.Context, err error, stderr string) error {
	msg := strings.TrimSpace(stderr)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && msg != "" && ctx.Err() == nil {
		return errors.New(msg)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s stopped: %w", h.Topic, h.Name, ctx.Err())
	}
	if msg != "" {
		return fmt.Errorf("%s: %s: %v: %s", h.Topic, h.Name, err, msg)
	}
	return fmt.Errorf("%s: %s: %v", h.Topic, h.Name, err)
}
