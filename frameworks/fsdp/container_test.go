package fsdp

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
)

// The local torch base images container/testdata/make-torch-base.sh builds from Debian's archive.
const (
	imageTrixie   = "rival-test/torch-base:trixie"   // Debian 13: python3-torch 2.6.0, Python 3.13
	imageBookworm = "rival-test/torch-base:bookworm" // Debian 12: python3-torch 1.13.1, Python 3.11
)

// engineWithImage connects to the Docker daemon and checks image exists. With
// RIVAL_TEST_TORCH_IMAGE=1 (CI builds both images) a missing daemon or image fails the
// test; otherwise it skips, saying how to get it.
func engineWithImage(t *testing.T, image, suite string) *container.Engine {
	t.Helper()
	stop := t.Skipf
	if os.Getenv("RIVAL_TEST_TORCH_IMAGE") == "1" {
		stop = t.Fatalf
	}
	ctx := context.Background()
	e, err := container.Connect(ctx)
	if err != nil {
		stop("no Docker daemon, so the trainer cannot run in %s: %v", image, err)
		return nil
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.ImageID(ctx, image); err != nil {
		stop("image %s is missing: build it with sudo SUITE=%s bash container/testdata/make-torch-base.sh (%v)", image, suite, err)
		return nil
	}
	return e
}

// listTree returns every path under dir with its size, for before/after comparisons.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s %v %d", rel, info.Mode().Type(), info.Size()))
		return nil
	}))
	sort.Strings(out)
	return out
}

// runInImage runs cfg's launch in image as the product's Docker executor does: the dataset
// mounted read-only, the run folder (holding train.py) read-write and the working directory,
// the launch's environment, no network. It returns the output lines and the exit code, and
// checks that the container is gone and that the mounted folders hold exactly what they held.
func runInImage(t *testing.T, e *container.Engine, image string, cfg Config) ([]string, Launch, int) {
	t.Helper()
	dataDir := filepath.Dir(cfg.DataPrefix)
	runDir, tmpDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(runDir, ScriptName), Script(), 0o644))
	cfg.ScriptPath, cfg.WorkDir = "/rival/run/"+ScriptName, "/rival/run"
	writeOrder(t, cfg)
	cfg.DataPrefix = "/rival/data/" + filepath.Base(cfg.DataPrefix)
	cfg.OrderDir = "/rival/data"
	cfg.Python = "python3"
	l, err := BuildLaunch(cfg)
	require.NoError(t, err)
	var env []string
	for k, v := range l.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	beforeData, beforeRun := listTree(t, dataDir), listTree(t, runDir)

	runID := fmt.Sprintf("fsdp-test-%d", time.Now().UnixNano())
	spec := container.RunSpec{
		Image: image, RunID: runID, Cmd: l.Command, Env: env, WorkDir: l.WorkDir, Network: "none",
		Platform: container.PlatformCPU, Timeout: 8 * time.Minute,
		Mounts: []container.Mount{
			{Source: dataDir, Target: "/rival/data", ReadOnly: true},
			{Source: runDir, Target: "/rival/run"},
			{Source: tmpDir, Target: "/tmp"}, // the container's /tmp, to see what the launch leaves there
		},
	}
	var lines []string
	code, err := e.Run(context.Background(), spec, func(line string) { lines = append(lines, line) })
	if _, exited := err.(*container.ExitError); err != nil && !exited {
		require.NoError(t, err, strings.Join(lines, "\n"))
	}
	left, err := e.Containers(context.Background(), runID)
	require.NoError(t, err)
	assert.Empty(t, left, "the run's container (and with it every process) is gone")
	assert.Equal(t, beforeData, listTree(t, dataDir), "the dataset folder is unchanged")
	var afterRun []string
	for _, f := range listTree(t, runDir) {
		if strings.HasPrefix(f, TorchrunLogDir) && slices.Contains(l.Command, "torchrun") {
			continue // torchrun's own log folders, kept with the run's outputs
		}
		afterRun = append(afterRun, f)
	}
	assert.Equal(t, beforeRun, afterRun, "the run leaves no file behind (the rendezvous store is gone)")
	leftInTmp, err := os.ReadDir(tmpDir)
	require.NoError(t, err)
	assert.Empty(t, leftInTmp, "the run leaves nothing in /tmp")
	return lines, l, code
}

// shardOracle is the number of elements of each rank's FSDP2 shards: every parameter split on
// dim 0 into world chunks of ceil(rows/world) rows (torch.chunk's rule), independently of the script.
func shardOracle(c Config, world int) (tensors int, perRank []int) {
	kv := c.KVHeads * c.Hidden / c.Heads
	type shape struct{ rows, cols int }
	shapes := []shape{{c.Vocab, c.Hidden}, {c.Vocab, c.Hidden}, {c.Hidden, 1}} // embedding, head, final norm
	for range c.Layers {
		shapes = append(shapes,
			shape{c.Hidden, 1}, shape{c.Hidden, 1}, // attention and MLP norms
			shape{c.Hidden, c.Hidden}, shape{kv, c.Hidden}, shape{kv, c.Hidden}, shape{c.Hidden, c.Hidden}, // q k v o
			shape{c.FFN, c.Hidden}, shape{c.FFN, c.Hidden}, shape{c.Hidden, c.FFN}) // gate up down
	}
	perRank = make([]int, world)
	for _, s := range shapes {
		chunk := (s.rows + world - 1) / world
		for r := range world {
			rows := min(chunk, max(0, s.rows-r*chunk))
			perRank[r] += rows * s.cols
		}
	}
	return len(shapes), perRank
}

var shardingLine = regexp.MustCompile(`^\[rival-fsdp\] sharding: (\d+) of (\d+) parameters are DTensors (\S+) on a (\d+)-rank mesh \| local elements per rank: ([\d, ]+)$`)

// Two processes on gloo: in Debian 13's torch 2.6 under torchrun as GPU hosts start it
// (LauncherTorchrun, with the file rendezvous store in the run folder) and with the script's own
// launcher, both the FSDP2 path GPU hosts take; in Debian 12's torch 1.13 with the script's own
// launcher (the DDP path), whose torchrun cannot start under Python 3.11. The path each
// torch takes, the dtypes, the attention and the optimizer, FSDP2's DTensor shards against an
// independent count, 30 steps of falling loss, the two paths' losses agreeing step by step,
// and nothing left behind.
func TestTrainTwoProcessesInTorchImages(t *testing.T) {
	cases := []struct {
		name, image, suite string
		edit               func(*Config)
		want               Runtime
		forward            string   // the dtypes the first block's query projection computed with
		launcher           []string // the launch command's start
	}{
		{
			name: "trixie torch 2.6 FSDP2", image: imageTrixie, suite: "trixie",
			edit: func(c *Config) { c.Precision, c.Attention = "bf16", "sdpa" },
			want: Runtime{Path: PathFSDP2, Torch: "2.6.0", ParamDType: "bf16", ReduceDType: "fp32",
				Attention: "sdpa enable_gqa", Optimizer: "AdamW fused"},
			forward:  "weight bfloat16, output bfloat16",
			launcher: []string{"python3", "/rival/run/" + ScriptName},
		},
		{
			name: "trixie torch 2.6 FSDP2 torchrun", image: imageTrixie, suite: "trixie",
			edit: func(c *Config) {
				c.Precision, c.Attention = "bf16", "sdpa"
				c.Launcher, c.Torchrun, c.Rendezvous = LauncherTorchrun, "torchrun", RendezvousFile
			},
			want: Runtime{Path: PathFSDP2, Torch: "2.6.0", ParamDType: "bf16", ReduceDType: "fp32",
				Attention: "sdpa enable_gqa", Optimizer: "AdamW fused"},
			forward: "weight bfloat16, output bfloat16",
			launcher: []string{"sh", "-c", fileStoreWrapper, "sh", "/rival/run/" + RendezvousStoreName, "torchrun", "--nnodes=1", "--rdzv-backend=c10d",
				"--rdzv-endpoint=/rival/run/" + RendezvousStoreName, "--rdzv-conf=store_type=file",
				"--local-addr=127.0.0.1", "--log-dir=/rival/run/" + TorchrunLogDir, "--nproc_per_node=2", "/rival/run/" + ScriptName},
		},
		{
			name: "bookworm torch 1.13 DDP", image: imageBookworm, suite: "bookworm",
			edit: func(c *Config) { c.Precision = "fp32" },
			want: Runtime{Path: PathDDP, Torch: "1.13", ParamDType: "fp32", ReduceDType: "fp32",
				Attention: "manual (K/V repeated per group)", Optimizer: "AdamW foreach"},
			forward:  "weight float32, output float32",
			launcher: []string{"python3", "/rival/run/" + ScriptName},
		},
	}
	data := proxyDataset(t, 2048)
	losses := map[string][]float64{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWithImage(t, tc.image, tc.suite)
			cfg := proxyConfig(t, data)
			cfg.NProcPerNode, cfg.MicroBatch, cfg.GradAccum, cfg.TrainIters = 2, 2, 1, 30
			tc.edit(&cfg)
			lines, l, code := runInImage(t, e, tc.image, cfg)
			stdout := strings.Join(lines, "\n")
			require.Equal(t, 0, code, stdout)
			for _, line := range lines {
				if strings.HasPrefix(line, "[rival-fsdp]") || strings.Contains(line, "rival_fsdp_") ||
					strings.Contains(line, "iteration       30/") {
					t.Log(line)
				}
			}
			require.GreaterOrEqual(t, len(l.Command), len(tc.launcher))
			assert.Equal(t, tc.launcher, l.Command[:len(tc.launcher)])

			parsed := parseLog(t, stdout)
			assert.Equal(t, 2, *parsed.Preamble.WorldSize)
			rt, ok, err := RuntimeFromArgs(parsed.Preamble.Args)
			require.NoError(t, err)
			require.True(t, ok, "the log reports what ran:\n%s", stdout)
			assert.Equal(t, tc.want.Path, rt.Path)
			assert.True(t, strings.HasPrefix(rt.Torch, tc.want.Torch), "torch %q", rt.Torch)
			assert.Equal(t, tc.want.ParamDType, rt.ParamDType)
			assert.Equal(t, tc.want.ReduceDType, rt.ReduceDType)
			assert.True(t, strings.HasPrefix(rt.Attention, tc.want.Attention), "attention %q", rt.Attention)
			assert.Equal(t, tc.want.Optimizer, rt.Optimizer)

			assert.Contains(t, stdout, "[rival-fsdp] first forward: query projection "+tc.forward)
			var sharding []string
			for _, line := range lines {
				if m := shardingLine.FindStringSubmatch(line); m != nil {
					sharding = m
				}
			}
			if tc.want.Path == PathFSDP2 {
				require.NotNil(t, sharding, "no sharding line:\n%s", stdout)
				tensors, perRank := shardOracle(cfg, 2)
				assert.Equal(t, []string{strconv.Itoa(tensors), strconv.Itoa(tensors), "Shard(dim=0)", "2"}, sharding[1:5])
				assert.Equal(t, fmt.Sprintf("%d, %d", perRank[0], perRank[1]), sharding[5])
				assert.Contains(t, stdout, "[rival-fsdp] parameters: bf16 | gradient reduction: fp32")
			} else {
				assert.Nil(t, sharding)
			}

			its := iterations(t, stdout)
			require.Len(t, its, 30)
			mean := func(s []iteration) float64 {
				var sum float64
				for _, it := range s {
					sum += it.loss
				}
				return sum / float64(len(s))
			}
			first, last := mean(its[:5]), mean(its[25:])
			assert.InDelta(t, 7.62, its[0].loss, 0.3, "an untrained model predicts about ln(2048)")
			assert.Less(t, last, first-1.0, "loss must fall over 30 steps: first five %.3f, last five %.3f", first, last)
			for _, it := range its {
				losses[tc.name] = append(losses[tc.name], it.loss)
			}
		})
	}
	// Same seed, same samples, same global batch: FSDP2 with bf16 parameters on torch 2.6 must follow
	// DDP in fp32 on torch 1.13 step by step, up to bf16 rounding (1%; they agree to 0.1% on the
	// 2-core reference machine). A wrong gradient average or shard would drift far more.
	// The two launchers of the FSDP2 path run the same computation, so they agree exactly.
	b := losses[cases[len(cases)-1].name]
	for _, tc := range cases[:len(cases)-1] {
		a := losses[tc.name]
		if len(a) == 30 && len(b) == 30 {
			for i := range a {
				assert.InEpsilon(t, b[i], a[i], 0.01, "%s iteration %d: fsdp2 bf16 %g, ddp fp32 %g", tc.name, i+1, a[i], b[i])
			}
		}
	}
	if a, c := losses[cases[0].name], losses[cases[1].name]; len(a) == 30 && len(c) == 30 {
		assert.Equal(t, a, c, "the script's launcher and torchrun train the same FSDP2 run")
	}
}
