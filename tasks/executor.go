package tasks

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
)

// executor runs a framework launch and streams its output lines.
type executor interface {
	// Run starts launch with runDir holding its files, calls onLine for
	// every output line, and returns the exit code. It must leave nothing
	// running when ctx ends.
	Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (execInfo, error)
	// Place says where host directories appear to the trainer (the same
	// paths on the host, mount points in a container).
	Place(dirs []PathMap) []PathMap
	// Kind names the executor in task keys and results.
	Kind() executorKind
	// ImageDigest is the digest of the image runs use ("" on the host).
	ImageDigest() string
}

// executorKind names how a launch runs. Its value is part of every training
// task's key (the "executor" tool), so the spellings below must not change.
type executorKind string

// The executors Rival has.
const (
	executorHost   executorKind = "host"   // a local process group (HostExecutor)
	executorDocker executorKind = "docker" // one container on the training host (DockerExecutor)
	executorSlurm  executorKind = "slurm"  // a Slurm batch job (SlurmExecutor)
	executorKube   executorKind = "k8s"    // a Kubernetes Indexed Job (KubeExecutor)
)

// PathMap is a host directory and where the trainer sees it.
type PathMap struct {
	Host, Inside string
	ReadOnly     bool
	Role         string // "data", "tokenizer", "run" or "cache"
}

// inside maps a host path through placed directories. The longest placed
// directory that contains the path decides, as a mount table does: the
// writable cache folder may lie inside the read-only data folder on the
// host, and a path under it must map to the cache mount.
func inside(maps []PathMap, host string) string {
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

// execInfo is what an executor learned about a run.
type execInfo struct {
	ExitCode    int
	ContainerID string
	ImageID     string
	SlurmJobID  string
	KubeJob     string // CLUSTER/NAMESPACE/NAME of a Kubernetes run
	NodeList    []string
	// Ran is what the image held, read inside it by a Slurm job's preflight step ("key value, ...");
	// one-host runs read it from RunPreflight before the launch.
	Ran string
	// Effective is the effective configuration a cluster job's preflight step read back in the image
	// (already checked against the workload); one-host runs read it from RunPreflight.
	Effective *effective.Config
	// Samples is a cluster job's preflight step's digest of the first samples its framework reads
	// (already compared with Rival's); one-host runs read it from RunPreflight.
	Samples *preflightSamples
}
