package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/slurm"
)

// slurmScriptName is the batch script a Slurm run writes in its run folder:
// a build artifact, readable, cached with the run's inputs.
const slurmScriptName = "job.sbatch"

// Slurm hands a run to Slurm: it writes a batch script that starts
// the same framework launch on every node (in the platform image through
// pyxis on NVIDIA clusters, docker run per node on AMD ones, on the hosts
// for cpu), submits it with sbatch, and follows the job and its log.
type Slurm struct {
	Cluster     slurm.Cluster
	Platform    string
	NNodes      int
	GPUsPerNode int
	TP, PP, DP  int
	// Image is the platform image for container modes, in the syntax the mode reads (the tasks package's slurmImage).
	Image string
	// ImageID is the image the nodes run, recorded in the result: the pushed repo@sha256:...
	// reference, or in docker mode without a push the ID each node's daemon reported for the image it
	// ran (slurm.NodeImageID; nodes that disagree fail the run), else this host's build ID.
	ImageID                 string
	Partition, Account, Tim string
}

// Kind implements Executor.
func (s *Slurm) Kind() Kind { return KindSlurm }

// ImageDigest implements Executor.
func (s *Slurm) ImageDigest() string { return s.ImageID }

// containerMode is how the job runs the launch on each node.
func (s *Slurm) containerMode() string { return ContainerMode(s.Platform) }

// Place implements Executor: in containers the usual /rival mount points,
// on the hosts the paths themselves (a shared filesystem).
func (s *Slurm) Place(dirs []PathMap) []PathMap {
	if s.containerMode() == slurm.ContainerNone {
		return Host{}.Place(dirs)
	}
	return dirs
}

// Job is the Slurm job of a launch.
func (s *Slurm) Job(launch core.Launch, maps []PathMap) (slurm.Job, string, error) {
	runDir := ""
	for _, m := range maps {
		if m.Role == "run" {
			runDir = m.Host
		}
	}
	if runDir == "" {
		return slurm.Job{}, "", errors.New("slurm: no run folder among the mounts")
	}
	var mounts []slurm.Mount
	if s.containerMode() != slurm.ContainerNone {
		for _, m := range maps {
			mounts = append(mounts, slurm.Mount{Host: m.Host, Container: m.Inside, ReadOnly: m.ReadOnly})
		}
	}
	env := map[string]string{}
	for k, v := range launch.Env {
		env[k] = v
	}
	job := slurm.Job{
		Name: "rival-" + launch.Framework, NNodes: s.NNodes, GPUsPerNode: s.GPUsPerNode, TP: s.TP, PP: s.PP, DP: s.DP,
		Partition: s.Partition, Account: s.Account, Time: s.Tim, Image: s.Image, Container: s.containerMode(),
		Command: slurm.PerNodeArgs(launch.Command), WorkDir: launch.WorkDir, Env: env, Mounts: mounts,
		OutputDir: runDir, LogPath: filepath.Join(runDir, "slurm.log"), NodeHardware: true,
	}
	if s.Platform != hw.PlatformCPU {
		job.PowerPlatform = s.Platform
	}
	if launch.Preflight != nil {
		job.Preflight = slurmPreflight(launch)
	}
	if s.containerMode() == slurm.ContainerDocker {
		job.DockerRunArgs = []string{"--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video",
			"--security-opt", "seccomp=unconfined", "--ipc", "host", "--network", "host", "--shm-size", "16g"}
	}
	script, err := slurm.Script(job)
	return job, script, err
}

// slurmPreflight is the launch's preflight as the job's first step runs it: the job exports the
// run's environment, and `env` adds what the preflight sets beyond it (the world size, the GPU's
// compute capability), so the training step never inherits those.
func slurmPreflight(launch core.Launch) []string {
	var keys []string
	for k, v := range launch.Preflight.Env {
		if rv, ok := launch.Env[k]; !ok || rv != v {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	argv := []string{"env"}
	for _, k := range keys {
		argv = append(argv, k+"="+launch.Preflight.Env[k])
	}
	if launch.Preflight.WorkDir != "" && launch.Preflight.WorkDir != launch.WorkDir {
		argv = append(argv, "-C", launch.Preflight.WorkDir)
	}
	return append(argv, launch.Preflight.Command...)
}

// Run implements Executor.
func (s *Slurm) Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (Info, error) {
	job, script, err := s.Job(launch, maps)
	if err != nil {
		return Info{}, err
	}
	path := filepath.Join(job.OutputDir, slurmScriptName)
	if err := cache.WriteFileAtomic(path, []byte(script), 0o755); err != nil {
		return Info{}, err
	}
	id, err := s.Cluster.Submit(ctx, path)
	if err != nil {
		return Info{}, err
	}
	fmt.Fprintf(os.Stderr, "slurm: submitted job %s (%s)\n", id, path)
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	pf := newPreflightLines(launch, stop)
	final, err := s.Cluster.Follow(fctx, id, job.LogPath, func(l string) {
		pf.see(l)
		onLine(l)
	})
	info := Info{SlurmJobID: id, NodeList: final.Nodes, ExitCode: final.ExitCode, ImageID: s.ImageID, Ran: pf.ran, Effective: pf.effective, Samples: pf.samples, HeldOut: pf.heldOut}
	if pf.mismatch != nil {
		return info, fmt.Errorf("preflight of Slurm job %s stopped the run (job cancelled): %w (log: %s)", id, pf.mismatch, job.LogPath)
	}
	if pf.failed != "" && final.ExitCode != 0 {
		return info, fmt.Errorf("preflight of Slurm job %s stopped the run before torchrun started: %s (log: %s)", id, pf.failed, job.LogPath)
	}
	if hwNodes, herr := slurm.ReadNodeHardware(job.OutputDir); herr == nil {
		for _, n := range hwNodes {
			info.NodeList = appendUnique(info.NodeList, n.Node)
		}
	}
	sort.Strings(info.NodeList)
	if s.containerMode() == slurm.ContainerDocker {
		// What each node's daemon ran, not what this host built: the same tag may name other builds there.
		ranID, ierr := slurm.NodeImageID(job.OutputDir)
		if ierr != nil {
			return info, fmt.Errorf("Slurm job %s: %w", id, ierr)
		}
		if ranID != "" && !strings.Contains(s.ImageID, "@sha256:") {
			info.ImageID = ranID // a pushed repo@sha256 reference already names the content
		}
	}
	var jerr *slurm.JobError
	if errors.As(err, &jerr) && jerr.Final.State == "FAILED" && jerr.Final.ExitCode != 0 {
		// A job that ran and exited non-zero: report it like a process exit.
		return info, nil
	}
	return info, err
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// ContainerMode is how a Slurm job of platform runs its launch on each node.
func ContainerMode(platform string) string {
	switch platform {
	case hw.PlatformNVIDIA:
		return slurm.ContainerPyxis
	case hw.PlatformAMD:
		return slurm.ContainerDocker
	}
	return slurm.ContainerNone
}
