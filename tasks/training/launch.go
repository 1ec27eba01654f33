package training

import (
	"fmt"
	"path/filepath"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
)

// Launch builds the framework launch of a run named name for a dataset fingerprint fp, with the
// folders placed where the executor shows them, and returns them with the Megatron data cache
// folder of that fingerprint.
func Launch(in Run, site Site, name, fp string) (core.Launch, []executor.PathMap, string, error) {
	runDir := filepath.Join(site.OutputDir, "runs", name)
	absPrefix, err := filepath.Abs(in.TrainPrefix)
	if err != nil {
		return core.Launch{}, nil, "", err
	}
	tokDir, err := filepath.Abs(filepath.Dir(in.Tokenizer.Path))
	if err != nil {
		return core.Launch{}, nil, "", err
	}
	// Megatron caches sample indices by dataset path: one cache folder per
	// dataset fingerprint keeps two datasets from sharing stale indices.
	cacheDir := filepath.Join(site.DataDir, "megatron-cache", fp)
	maps := in.Executor.Place([]executor.PathMap{
		{Host: filepath.Dir(absPrefix), Inside: "/rival/data", ReadOnly: true, Role: "data"},
		{Host: tokDir, Inside: "/rival/tokenizer", ReadOnly: true, Role: "tokenizer"},
		{Host: runDir, Inside: "/rival/run", Role: "run"},
		{Host: cacheDir, Inside: "/rival/cache", Role: "cache"},
	})
	req := core.Request{
		Platform: in.Platform, Framework: in.Framework, Stack: in.Stack, Model: in.Model, Fair: in.Workload.Fair, Host: in.Host,
		DataPrefix: executor.Inside(maps, absPrefix), DataCacheDir: executor.Inside(maps, cacheDir), TokenizerPath: executor.Inside(maps, tokDir),
		OutputDir: executor.Inside(maps, runDir), NNodes: in.Workload.NNodes,
	}
	if in.Platform == hw.PlatformCPU {
		req.GPUs = in.Workload.cpuProcs()
	}
	l, err := frameworks.Build(req)
	if err != nil {
		return l, nil, "", fmt.Errorf("train %s: %w", name, err)
	}
	return l, maps, cacheDir, nil
}
