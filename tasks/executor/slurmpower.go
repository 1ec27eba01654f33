package executor

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/slurm"
)

// SlurmPower is the power of a Slurm run, read from the samples each compute node wrote under
// runDir/nodes/ (slurm.ReadNodePower), keeping those between the first and last measured step
// (from, to: the step lines' dates as the job's log streamed in). With no node's samples (the
// tool is missing on the nodes) or no dated step, the result records the run as not sampled.
func SlurmPower(ctx context.Context, runDir, platform string, from, to time.Time, dated bool) *result.PowerMetrics {
	none := &result.PowerMetrics{Source: "none"}
	tool, _ := hw.PowerQuery(platform)
	if tool == "" {
		return none
	}
	nodes, err := slurm.ReadNodePower(ctx, runDir, platform)
	if err != nil {
		fmt.Fprintf(os.Stderr, "power: not sampled: %v\n", err)
		return none
	}
	if len(nodes) == 0 {
		fmt.Fprintf(os.Stderr, "power: not sampled: no compute node recorded %s samples under %s/nodes (is %s on the nodes' PATH?)\n", tool, runDir, tool)
		return none
	}
	pm := &result.PowerMetrics{Source: tool, IntervalSeconds: slurm.PowerInterval.Seconds()}
	if !dated {
		return pm
	}
	avg, maxW, samples, maxMem, ok := slurm.WindowPower(nodes, from, to)
	if !ok {
		fmt.Fprintf(os.Stderr, "power: not sampled: no node's %s sample falls between the first and last measured step\n", tool)
		return pm
	}
	pm.Samples, pm.AvgPowerWattsPerGPU, pm.MaxPowerWattsPerGPU = samples, &avg, &maxW
	if maxMem > 0 {
		pm.MaxMemoryUsedMiB = &maxMem
	}
	return pm
}
