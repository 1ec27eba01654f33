package slurm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/slurm"
	"github.com/rivalbench/rival/slurm/slurmtest"
)

// standInSMI answers the power query like nvidia-smi: four GPUs, those named by -i (or all),
// the job's GPUs drawing the wattage in the phase file, the others 100 W. It stands in for the
// tool because the test cluster's nodes have no GPU.
const standInSMI = `#!/bin/bash
sel=0,1,2,3
while [ $# -gt 0 ]; do
  case "$1" in -i) sel=$2; shift ;; esac
  shift
done
w=$(cat "$RIVAL_TEST_PHASE")
for i in ${sel//,/ }; do
  case "$i" in 0|1) echo "$i, $w.00, 40000" ;; *) echo "$i, 100.00, 10" ;; esac
done
`

// powerTrainer paces Megatron-format step lines on rank 0 and sets the wattage the GPUs draw:
// 300 W through start-up and the warm-up steps, 650 W from the end of the last warm-up step
// (the first measured step's start) until a second after the last step line (the margin the
// window's edges are known to: one sample), then 200 W while the job winds down. The other
// node draws what rank 0 sets, as the GPUs of a data-parallel job do.
func powerTrainer(warmup, steps int) string {
	line := `printf ' [%%s] iteration %%8d/%%8d | consumed samples: %%12d | elapsed time per iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 401.2 | learning rate: 3.000000E-04 | global batch size:     8 | lm loss: 9.000000E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |\n' "$(date '+%%Y-%%m-%%d %%H:%%M:%%S')" "$i" %d "$((i*8))"`
	line = fmt.Sprintf(line, steps)
	return fmt.Sprintf(`set -e
if [ "$NODE_RANK" != 0 ]; then
  until [ "$(cat "$RIVAL_TEST_PHASE")" = 200 ]; do sleep 0.2; done
  sleep 3
  exit 0
fi
sleep 2.5
for i in $(seq 1 %d); do
  if [ "$i" = %d ]; then echo 650 > "$RIVAL_TEST_PHASE.tmp"; mv "$RIVAL_TEST_PHASE.tmp" "$RIVAL_TEST_PHASE"; fi
  %s
  if [ "$i" -lt %d ]; then sleep 0.5; else sleep 1; fi
done
echo 200 > "$RIVAL_TEST_PHASE.tmp"; mv "$RIVAL_TEST_PHASE.tmp" "$RIVAL_TEST_PHASE"
sleep 3
`, steps, warmup, line, warmup)
}

// TestRealSlurmNodePower runs a two-node job whose nodes sample their GPUs with the job's own
// sampler and checks that the power read back for the measured steps is the 650 W drawn then,
// not the 300 W of start-up and warm-up nor the 200 W after, and only the job's GPUs.
func TestRealSlurmNodePower(t *testing.T) {
	cl := slurmtest.Start(t, slurmtest.Options{Nodes: 2})
	c := cl.Client()
	const warmup, steps = 3, 8
	job := hostJob(t, "node-power", 2, powerTrainer(warmup, steps))
	bin := filepath.Join(job.OutputDir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(standInSMI), 0o755))
	phase := filepath.Join(job.OutputDir, "phase")
	require.NoError(t, os.WriteFile(phase, []byte("300\n"), 0o644))
	job.PowerPlatform = hw.PlatformNVIDIA
	job.Env = map[string]string{
		"PATH":                 bin + ":" + os.Getenv("PATH"),
		"RIVAL_TEST_PHASE":     phase,
		"CUDA_VISIBLE_DEVICES": "0,1",
	}
	id := submit(t, c, job, nil)

	// The step clock: when each step line is first seen as the log streams in.
	stepRe := regexp.MustCompile(`iteration +(\d+)/`)
	var seen []time.Time
	var got lines
	got.on = func(l string) {
		if m := stepRe.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			if n == len(seen)+1 {
				seen = append(seen, time.Now())
			}
		}
	}
	final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
	require.NoError(t, err, "log:\n%s", strings.Join(got.all(), "\n"))
	require.Equal(t, slurm.StateCompleted, final.State)
	require.Len(t, seen, steps)
	from, to := seen[warmup-1], seen[steps-1]

	nodes, err := slurm.ReadNodePower(context.Background(), job.OutputDir, hw.PlatformNVIDIA)
	require.NoError(t, err)
	require.Len(t, nodes, 2, "every node records its own samples")
	var names []string
	for _, n := range nodes {
		names = append(names, n.Node)
		var watts []float64
		for _, s := range n.Samples {
			require.Len(t, s.PowerWatts, 2, "only the job's GPUs are sampled")
			watts = append(watts, s.PowerWatts[0])
		}
		assert.Contains(t, watts, 300.0, "node %s sampled start-up", n.Node)
		assert.Contains(t, watts, 650.0, "node %s sampled the measured steps", n.Node)
	}
	assert.ElementsMatch(t, cl.Nodes, names)

	avg, maxW, samples, _, ok := slurm.WindowPower(nodes, from, to)
	require.True(t, ok)
	assert.InDelta(t, 650, avg, 0.5, "the measured steps drew 650 W")
	assert.Equal(t, 650.0, maxW)
	assert.GreaterOrEqual(t, samples, 2*(steps-warmup-1), "about one sample a second on each node")

	// The sampler stopped with the launch: nothing is appended after the job.
	sizes := func() (s []int64) {
		for _, n := range cl.Nodes {
			fi, err := os.Stat(filepath.Join(job.OutputDir, "nodes", n, slurm.PowerFile))
			require.NoError(t, err)
			s = append(s, fi.Size())
		}
		return s
	}
	before := sizes()
	time.Sleep(2500 * time.Millisecond)
	assert.Equal(t, before, sizes(), "no node samples after its launch ended")
}
