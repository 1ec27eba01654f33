package slurm_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/slurm"
)

// Two nodes' power.log files as the per-node sampler writes them. The expected figures are
// worked by hand: in the window [1000.5, 1003.5] node a has the samples at 1001 and 1002
// (GPUs 0 and 1: 600+620, 640+660) and node b those at 1001.2 and 1003.4 (700+710, 720+730);
// the sample at 1000 (300 W) and 1004 (200 W) are outside. Mean: (600+620+640+660+700+710+720+730)/8 = 672.5.
const (
	nodeA = `@ 1000.000000000
0, 300.00, 1000
1, 300.00, 1000
@ 1001.000000000
0, 600.00, 2000
1, 620.00, 2000
@ 1002.000000000
0, 640.00, 2000
1, 660.00, 2100
@ 1004.000000000
0, 200.00, 1000
1, 200.00, 1000
`
	nodeB = `@ 1001.200000000
0, 700.00, 3000
1, 710.00, 3000
@ not-a-date
0, 999.00, 3000
@ 1003.400000000
0, 720.00, 3000
1, 730.00, 3000
@ 1003.450000000
0, 72`
)

func TestReadNodePowerAcrossNodes(t *testing.T) {
	dir := t.TempDir()
	for node, text := range map[string]string{"node-a": nodeA, "node-b": nodeB} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "nodes", node), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "nodes", node, slurm.PowerFile), []byte(text), 0o644))
	}
	// A node that recorded its hardware but no power is left out.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "nodes", "node-c"), 0o755))

	nodes, err := slurm.ReadNodePower(context.Background(), dir, hw.PlatformNVIDIA)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	assert.Equal(t, "node-a", nodes[0].Node)
	assert.Len(t, nodes[0].Samples, 4)
	assert.Equal(t, 0, nodes[0].Skipped)
	assert.Equal(t, "node-b", nodes[1].Node)
	assert.Len(t, nodes[1].Samples, 2, "the undated block and the block cut short are skipped")
	assert.Equal(t, 2, nodes[1].Skipped)
	assert.Equal(t, time.Unix(1001, 200000000), nodes[1].Samples[0].At)

	from, to := time.Unix(1000, 500000000), time.Unix(1003, 500000000)
	avg, maxW, samples, maxMem, ok := slurm.WindowPower(nodes, from, to)
	require.True(t, ok)
	assert.InDelta(t, 672.5, avg, 1e-9)
	assert.Equal(t, 730.0, maxW)
	assert.Equal(t, 4, samples)
	assert.Equal(t, 3000.0, maxMem)

	_, _, _, _, ok = slurm.WindowPower(nodes, time.Unix(2000, 0), time.Unix(2001, 0))
	assert.False(t, ok, "no sample in the window")
}

func TestReadNodePowerNone(t *testing.T) {
	nodes, err := slurm.ReadNodePower(context.Background(), t.TempDir(), hw.PlatformNVIDIA)
	require.NoError(t, err)
	assert.Empty(t, nodes)
}

func TestReadNodePowerAMD(t *testing.T) {
	n := slurm.ParseNodePower("mi", hw.PlatformAMD, []byte("@ 1700000000.25\n"+
		`[{"gpu": 0, "power": {"socket_power": {"value": 712, "unit": "W"}}, "mem_usage": {"used_vram": {"value": 1024, "unit": "MB"}}}]`+"\n"))
	require.Len(t, n.Samples, 1)
	assert.Equal(t, []float64{712}, n.Samples[0].PowerWatts)
	assert.Equal(t, time.Unix(1700000000, 250000000), n.Samples[0].At)
}

func FuzzParseNodePower(f *testing.F) {
	f.Add([]byte(nodeA), false)
	f.Add([]byte(nodeB), false)
	f.Add([]byte("@ 1e300\n0, 1, 2\n@ -5\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, amd bool) {
		platform := hw.PlatformNVIDIA
		if amd {
			platform = hw.PlatformAMD
		}
		n := slurm.ParseNodePower("n", platform, data)
		for _, s := range n.Samples {
			assert.False(t, s.At.IsZero())
		}
		slurm.WindowPower([]slurm.NodePower{n}, time.Unix(0, 0), time.Unix(1e10, 0))
	})
}

// TestScriptPowerBlock: the sampler block is in the per-node task only when asked for, uses the
// query the parser reads, writes where the per-node task sees OutputDir, and the script parses.
func TestScriptPowerBlock(t *testing.T) {
	base := slurm.Job{Name: "p", NNodes: 2, GPUsPerNode: 8, Command: []string{"python3", "train.py"},
		OutputDir: "/shared/run", LogPath: "/shared/run/slurm.log"}
	cases := []struct {
		name, platform, container, image, want, dir string
	}{
		{"off", "", slurm.ContainerNone, "", "", ""},
		{"nvidia host", hw.PlatformNVIDIA, slurm.ContainerNone, "", "nvidia-smi --query-gpu=index,power.draw,memory.used --format=csv,noheader,nounits", "d=/shared/run/nodes/"},
		{"nvidia pyxis", hw.PlatformNVIDIA, slurm.ContainerPyxis, "rival/nvd@sha256:" + strings.Repeat("0", 64), `sel=(-i "$ids")`, "d=/rival/run/nodes/"},
		{"amd docker", hw.PlatformAMD, slurm.ContainerDocker, "rival/amd:latest", "amd-smi metric --power --mem-usage --json", "d=/shared/run/nodes/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := base
			j.PowerPlatform, j.Container, j.Image = c.platform, c.container, c.image
			if c.container == slurm.ContainerPyxis {
				j.Mounts = []slurm.Mount{{Host: "/shared/run", Container: "/rival/run"}}
			}
			script, err := slurm.Script(j)
			require.NoError(t, err)
			if c.want == "" {
				assert.NotContains(t, script, slurm.PowerFile)
				return
			}
			assert.Contains(t, script, c.want)
			assert.Contains(t, script, c.dir)
			assert.Less(t, strings.Index(script, c.want), strings.Index(script, "export NODE_RANK"), "the sampler starts before the launch")
			if _, err := exec.LookPath("bash"); err == nil {
				out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput()
				assert.NoError(t, err, "%s", out)
				// The per-node task itself (a quoted here-document, not parsed above).
				_, node, _ := strings.Cut(script, "<<'NODE' || true\n")
				node, _, _ = strings.Cut(node, "\nNODE\n")
				out, err = exec.Command("bash", "-n", "-c", node).CombinedOutput()
				assert.NoError(t, err, "%s\n%s", out, node)
			}
		})
	}
}
