package kubeproc

import (
	"context"
	"io"

	"github.com/rivalbench/rival/internal/goprog"
)

// Package is the rival-kube program's import path, and Name its file's name.
const (
	Package = "github.com/rivalbench/rival/cmd/rival-kube"
	Name    = "rival-kube"
)

// program is rival-kube as goprog builds it. Its first build, with the targets' packages already
// cached, took 112.7 CPU seconds (2 min 44 s) on the 2-core reference machine.
var program = goprog.Program{Package: Package, Name: Name, Topic: "kube", What: "the Kubernetes client", Holds: "client-go", FirstBuild: "3 minutes"}

// Helper is the rival-kube program, built from this module's source with `go build` on first use.
type Helper struct {
	// Dir is a folder inside Rival's source (the workspace root); BinDir the cache's bin folder;
	// Notice receives the line said before the first, slow build (nil: standard error).
	Dir, BinDir string
	Notice      io.Writer
}

func (h *Helper) prog() *goprog.Helper {
	return &goprog.Helper{Program: program, Dir: h.Dir, BinDir: h.BinDir, Notice: h.Notice}
}

// Path is where the program is built: one file per checkout.
func (h *Helper) Path() string { return h.prog().Path() }

// Build builds the program if it is missing or stale and returns its path.
func (h *Helper) Build(ctx context.Context) (string, error) { return h.prog().Build(ctx) }
