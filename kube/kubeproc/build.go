package kubeproc

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

	"golang.org/x/sys/unix"
)

// Package is the rival-kube program's import path, and Name its file's name.
const (
	Package = "github.com/rivalbench/rival/cmd/rival-kube"
	Name    = "rival-kube"
)

// Helper is the rival-kube program, built from this module's source with `go build` on first use.
// go build relinks it only when its source or Go changed, so a later build costs a second or two.
type Helper struct {
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
	return filepath.Join(h.BinDir, Name+"-"+hex.EncodeToString(sum[:6]))
}

// Build builds the program if it is missing or stale and returns its path.
func (h *Helper) Build(ctx context.Context) (string, error) {
	out := h.Path()
	if h.BinDir == "" {
		return "", errors.New("kube: no folder to build the Kubernetes client (rival-kube) in")
	}
	if _, ok := built.Load(out); ok {
		return out, nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("kube: the Kubernetes client is the program %s, which Rival builds with `go build -o %s %s`, and there is no `go` command on PATH (%v): put Go's bin folder on PATH", Name, out, Package, err)
	}
	mod, err := h.moduleDir(ctx, goCmd)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(h.BinDir, 0o755); err != nil {
		return "", fmt.Errorf("kube: building the Kubernetes client: %w", err)
	}
	// Two invocations building at once would write the same file.
	unlock, err := lock(ctx, out+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(out); errors.Is(err, fs.ErrNotExist) {
		w := h.Notice
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintf(w, "kube: compiling the Kubernetes client (%s, with client-go) once into %s: this takes about %s on a 2-core machine; later runs reuse it\n", Package, out, firstBuild)
	}
	args := []string{"build", "-buildvcs=false", "-o", out, Package}
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = mod
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kube: building the Kubernetes client failed: `go %s` in %s: %v\n%s", strings.Join(args, " "), mod, err, strings.TrimSpace(log.String()))
	}
	built.Store(out, struct{}{})
	return out, nil
}

// firstBuild is what the first build takes, measured on a 2-core x86-64 machine whose build cache
// already holds the targets' packages (they have just been compiled for `go run mage.go`).
const firstBuild = "3 minutes"

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
	return "", fmt.Errorf("kube: building the Kubernetes client (%s) needs Rival's source, and neither %s nor the working directory %s is inside a Go module: run `go run mage.go` in Rival's folder", Package, h.Dir, wd)
}

// lock takes an exclusive flock on path, waiting while another process holds it, until ctx ends.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kube: building the Kubernetes client: %w", err)
	}
	wait := 10 * time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("kube: locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("kube: waiting for another build of the Kubernetes client (%s): %w", path, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}
