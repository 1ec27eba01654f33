package tasks

import (
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/hw"
)

func platformsOf(framework string) []string { return frameworks.Platforms(framework) }

// platformConfig is the configuration runs of platform use: on the cpu
// platform one process per node, so TP=PP=1 and DP=NNODES (GBS follows).
func (w *Workspace) platformConfig(platform string) (*config, error) {
	if platform != hw.PlatformCPU {
		return w.config, nil
	}
	return w.config.with("train:cpu", map[string]string{"TP": "1", "PP": "1", "DP": w.config.get("NNODES"), "GBS": ""})
}
