package training

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
)

// buildResult parses the run's log in its family and turns it, with the
// facts of the run (its dataset's manifest, read once by prepare),
// into its result.
func (r *trainRun) buildResult(logPath string) (*result.Result, error) {
	in, f, launch := r.in, r.in.Workload.Fair, r.launch
	family := launch.LogFamily
	if family == "" {
		family = frameworks.LogFamily(launch.Framework)
	}
	lg, err := logparse.ParseFile(logPath, family)
	if err != nil {
		return nil, err
	}
	version := launch.FrameworkVersion
	if launch.RanFile != "" {
		// What ran, as the entry script read it inside the container; the pin stays for reference.
		ran, err := launch.Ran(r.runDir)
		if err != nil {
			return nil, err
		}
		version = ran + " (pinned: " + launch.FrameworkVersion + ")"
	}
	m, err := models.Lookup(in.Model)
	if err != nil {
		return nil, err
	}
	facts := result.Facts{
		GPUs: in.gpus(), SeqLen: f.SL, GBS: f.GBS, MBS: f.MBS,
		Precision: f.Precision, Platform: in.Platform, Host: &in.Host, Model: m.Name,
		Framework: launch.Framework, FrameworkVersion: version, FrameworkRequested: launch.Requested, Stack: in.stackName(launch),
		TP: f.TP, PP: f.PP,
		DatasetName: in.Dataset, DatasetFingerprint: r.manifest.Fingerprint.Digest.String(), TokenizerFingerprint: r.manifest.TokenizerDigest.String(),
		ConfigFingerprint: in.Workload.Fingerprint, ImageDigest: in.Executor.ImageDigest(), RivalVersion: r.site.RivalVersion,
	}
	if facts.LogDigest, err = result.LogDigest(logPath); err != nil {
		return nil, err
	}
	if len(in.Host.GPUs) > 0 {
		facts.GPUModel = in.Host.GPUs[0].Model
		if facts.GPUModel == "" {
			facts.GPUModel = in.Host.GPUs[0].Name
		}
	}
	if err := fsdpRuntime(lg, &facts, logPath); err != nil {
		return nil, err
	}
	res, err := result.Build(lg, facts)
	if err != nil {
		return nil, err
	}
	if k := in.Executor.Kind(); in.Platform == hw.PlatformCPU && k != executor.KindSlurm && k != executor.KindKube {
		res.CPUInfo = cpuInfo(r.site.CPUInfo, in.Workload.cpuProcs(), logPath) // this host's CPU; a cluster's node reads its own
	}
	return res, nil
}

// fsdpRuntime adds what the fsdp trainer reports of the path that ran.
func fsdpRuntime(lg *logparse.Log, facts *result.Facts, logPath string) error {
	// The fsdp trainer reports which of its paths ran, on which torch (docs/fsdp.md).
	if rt, ok, err := fsdp.RuntimeFromArgs(lg.Preamble.Args); err != nil {
		return fmt.Errorf("%s: %w", logPath, err)
	} else if ok {
		facts.FrameworkVersion += "; ran " + rt.String()
	}
	return nil
}

// ReadManifest reads the encode manifest of a dataset prefix.
func ReadManifest(prefix string) (data.Manifest, error) {
	raw, err := cache.ReadFileLimit(context.Background(), data.ManifestPath(prefix), cache.LimitManifest)
	if err != nil {
		return data.Manifest{}, fmt.Errorf("dataset %s has no usable manifest: %w (encode it with Rival first)", prefix, err)
	}
	return data.DecodeManifest(data.ManifestPath(prefix), raw)
}

// provenance records how and where a run ran.
func (r *trainRun) provenance(info executor.Info, started, finished time.Time) *result.Provenance {
	in, launch, prefix := r.in, r.launch, r.absPrefix
	host, _ := os.Hostname()
	p := &result.Provenance{
		RunIndex: in.RunIndex, Host: host, StartedAt: started.Format(time.RFC3339), FinishedAt: finished.Format(time.RFC3339),
		LaunchCommand: launch.Command, LaunchEnv: launch.Env, DataPrefix: prefix, TokenizerPath: in.Tokenizer.Path,
		NodeList: info.NodeList, Config: in.Workload.Values,
	}
	if launch.EntryScriptDigest != "" {
		p.EntryScriptDigest = &launch.EntryScriptDigest
	}
	if launch.Remapped != "" {
		p.Remapped = &launch.Remapped
	}
	for _, s := range []struct {
		v   string
		dst **string
	}{{info.ImageID, &p.ImageID}, {info.ContainerID, &p.ContainerID}, {info.SlurmJobID, &p.SlurmJobID}, {info.KubeJob, &p.KubeJob}} {
		if s.v != "" {
			v := s.v
			*s.dst = &v
		}
	}
	return p
}
