package executor

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
)

// Executor runs a framework launch and streams its output lines.
type Executor interface {
	// Run starts launch with runDir holding its files, calls onLine for
	// every output line, and returns the exit code. It must leave nothing
	// running when ctx ends.
	Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (Info, error)
	// Place says where host directories appear to the trainer (the same
	// paths on the host, mount points in a container).
	Place(dirs []PathMap) []PathMap
	// Kind names the executor in task keys and results.
	Kind() Kind
	// ImageDigest is the digest of the image runs use ("" on the host).
	ImageDigest() string
}

// StopGrace is how long Rival waits, after the first Ctrl-C or SIGTERM,
// for running tasks to stop their trainers and remove their containers
// before it stops at once. It covers a container's stop (SIGTERM, 10 s,
// SIGKILL, removal) with room to spare; RIVAL_STOP_GRACE overrides it. A
// Kube without its own Grace deletes a run's objects within it.
const StopGrace = 2 * time.Minute

// Kind names how a launch runs. Its value is part of every training
// task's key (the "executor" tool), so the spellings below must not change.
type Kind string

// The executors Rival has.
const (
	KindHost   Kind = "host"   // a local process group (Host)
	kindDocker Kind = "docker" // one container on the training host (Docker; tasks tells it by its type)
	KindSlurm  Kind = "slurm"  // a Slurm batch job (Slurm)
	KindKube   Kind = "k8s"    // a Kubernetes Indexed Job (Kube)
)

// PathMap is a host directory and where the trainer sees it.
type PathMap struct {
	Host, Inside string
	ReadOnly     bool
	Role         string // "data", "tokenizer", "run" or "cache"
}

// Inside maps a host path through placed directories. The longest placed
// directory that contains the path decides, as a mount table does: the
// writable cache folder may lie inside the read-only data folder on the
// host, and a path under it must map to the cache mount.
func Inside(maps []PathMap, host string) string {
	best, bestRel := -1, ""
	for i, m := range maps {
		rel, err := filepath.Rel(m.Host, host)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if best < 0 || len(m.Host) > len(maps[best].Host) {
			best, bestRel = i, rel
		}
	}
	if best < 0 {
		return host
	}
	if bestRel == "." {
		return maps[best].Inside
	}
	return filepath.ToSlash(filepath.Join(maps[best].Inside, bestRel))
}

// Info is what an executor learned about a run.
type Info struct {
	ExitCode    int
	ContainerID string
	ImageID     string
	SlurmJobID  string
	KubeJob     string // CLUSTER/NAMESPACE/NAME of a Kubernetes run
	NodeList    []string
	// Ran is what the image held, read inside it by a Slurm job's preflight step ("key value, ...");
	// one-host runs read it from training.Preflight (package tasks/training) before the launch.
	Ran string
	// Effective is the effective configuration a cluster job's preflight step read back in the image
	// (already checked against the workload); one-host runs read it from training.Preflight.
	Effective *effective.Config
	// Samples is a cluster job's preflight step's digest of the first samples its framework reads
	// (already compared with Rival's); one-host runs read it from training.Preflight.
	Samples *core.SampleDigest
	// HeldOut is the job's preflight's digest of the held-out sequences (nil: none printed).
	HeldOut *core.SampleDigest
}
