package upstreamtest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rivalbench/rival/container"
)

// TorchImage is the local Debian trixie image with torch 2.6 (container/testdata/make-torch-base.sh),
// where tests run the frameworks' own code with real torch on the CPU.
const TorchImage = "rival-test/torch-base:trixie"

// TorchEngine returns a Docker engine that has TorchImage, or skips (fails under
// RIVAL_TEST_TORCH_IMAGE=1, as CI sets it) naming the command that provides it.
func TorchEngine(t *testing.T) *container.Engine {
	t.Helper()
	stop := t.Skipf
	if os.Getenv("RIVAL_TEST_TORCH_IMAGE") == "1" {
		stop = t.Fatalf
	}
	e, err := container.Connect(context.Background())
	if err != nil {
		stop("no Docker daemon to run torch in %s: %v (start dockerd, then: sudo SUITE=trixie bash container/testdata/make-torch-base.sh)", TorchImage, err)
		return nil
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.ImageID(context.Background(), TorchImage); err != nil {
		stop("image %s is missing: build it with sudo SUITE=trixie bash container/testdata/make-torch-base.sh (%v)", TorchImage, err)
		return nil
	}
	return e
}

// ModernPython returns an executable python3 for the current stack's trees (Megatron Core 0.18 and
// Megatron-Bridge 0.5 need Python 3.12; Get's Python serves the previous stack): a script that runs
// python3 in TorchImage (Python 3.13) without a network, as the calling user, with the trees, the
// folder holding the repository (../shared beside it) and the temporary folder mounted at their own
// paths (and the extra folders, e.g. a symlinked ../shared resolved), and the caller's environment
// passed in by name. It skips (fails under
// RIVAL_TEST_TORCH_IMAGE=1) when the image is not there.
func (tr Trees) ModernPython(t *testing.T, repo string, extra ...string) string {
	t.Helper()
	TorchEngine(t)
	abs, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"docker", "run", "--rm", "-i", "--network", "none", "-u", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		"-e", "HOME=/tmp", "-e", "PYTHONDONTWRITEBYTECODE=1", "-w", "\"$PWD\""}
	seen := map[string]bool{}
	var mounted []string
	// The repository's parent holds ../shared (tokenizers) beside it.
	for _, d := range append([]string{tr.Dir, filepath.Dir(abs), os.TempDir()}, extra...) {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		mounted = append(mounted, shellQuote(d))
		args = append(args, "-v", shellQuote(d)+":"+shellQuote(d))
	}
	// The working directory is mounted too unless it is one of them (a nested mount is fine), and
	// the caller's environment goes in by name (docker reads each value itself, so any value
	// survives), except what describes the host rather than the run.
	script := "#!/bin/sh\nwd=\"$PWD\"\nextra=\"-v $wd:$wd\"\ncase \"$wd\" in " + strings.Join(mounted, "|") + ") extra= ;; esac\n" +
		"for n in $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do\n" +
		"  case \"$n\" in PATH|HOME|HOSTNAME|PWD|OLDPWD|SHLVL|_|TERM|USER|LOGNAME|SHELL|TMPDIR|GO*|CGO_*|DOCKER_*) ;; *) extra=\"$extra -e $n\" ;; esac\n" +
		"done\n" +
		"exec " + strings.Join(args, " ") + " $extra " + TorchImage + " python3 \"$@\"\n"
	// Named by its content in the temporary folder, not in t's: parallel subtests share one script
	// that outlives the subtest that wrote it.
	sum := sha256.Sum256([]byte(script))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("rival-modern-python-%x", sum[:6]))
	p := filepath.Join(dir, "python3")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, "python3-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.WriteString(script); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
