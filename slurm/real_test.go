package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container/registrytest"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/slurm"
	"github.com/rivalbench/rival/slurm/slurmtest"
	"github.com/rivalbench/rival/tasks/executor"
)

// These tests submit real jobs to a real slurmctld with two slurmd nodes on this host.

// lines collects a job's log lines as Follow passes them on.
type lines struct {
	mu sync.Mutex
	l  []string
	// on, when set, sees each line as it arrives.
	on func(string)
}

func (l *lines) add(s string) {
	l.mu.Lock()
	l.l = append(l.l, s)
	on := l.on
	l.mu.Unlock()
	if on != nil {
		on(s)
	}
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

// submit writes job's script under dir and submits it.
func submit(t *testing.T, c slurm.Cluster, job slurm.Job, edit func(string) string) string {
	t.Helper()
	script, err := slurm.Script(job)
	require.NoError(t, err)
	if edit != nil {
		script = edit(script)
	}
	path := filepath.Join(job.OutputDir, job.Name+".sbatch")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
	id, err := c.Submit(context.Background(), path)
	require.NoError(t, err)
	return id
}

// hostJob is a host-mode job running a bash snippet on each node.
func hostJob(t *testing.T, name string, nnodes int, bash string) slurm.Job {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	return slurm.Job{
		Name: name, NNodes: nnodes, Container: slurm.ContainerNone,
		Command:   []string{"bash", "-c", bash, "rival-test"},
		OutputDir: dir, LogPath: filepath.Join(dir, name+".log"),
	}
}

// megatronLines prints n Megatron-format iteration lines, sleep seconds apart.
func megatronLines(n int, sleep string) string {
	return fmt.Sprintf(`for i in $(seq 1 %d); do
  printf ' [%%s] iteration %%8d/%%8d | consumed samples: %%12d | elapsed time per iteration (ms): 812.3 | throughput per GPU (TFLOP/s/GPU): 401.2 | learning rate: 3.000000E-04 | global batch size:     8 | lm loss: 9.%%06dE+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |\n' "$(date '+%%Y-%%m-%%d %%H:%%M:%%S')" "$i" %d "$((i*8))" "$((900000-i*1000))"
  sleep %s
done`, n, n, sleep)
}

func TestRealSlurm(t *testing.T) {
	cl := slurmtest.Start(t, slurmtest.Options{Nodes: 2})
	host := cl.Nodes[0]

	t.Run("completed job streams its lines in order", func(t *testing.T) {
		c := cl.Client()
		job := hostJob(t, "megatron-lines", 1, megatronLines(5, "0.4")+"\necho \"rank=@NODE_RANK@ master=@MASTER_ADDR@:@MASTER_PORT@\"")
		job.Env = map[string]string{"RIVAL_QUOTED": "it's \"quoted\" $HOME `x`"}
		id := submit(t, c, job, nil)
		var got lines
		final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
		require.NoError(t, err)
		assert.Equal(t, slurm.StateCompleted, final.State)
		assert.Equal(t, 0, final.ExitCode)
		assert.Equal(t, id, final.JobID)
		assert.Len(t, final.Nodes, 1)

		var iters []string
		for _, l := range got.all() {
			if m := regexp.MustCompile(`iteration +(\d+)/`).FindStringSubmatch(l); m != nil {
				iters = append(iters, m[1])
			}
		}
		assert.Equal(t, []string{"1", "2", "3", "4", "5"}, iters)
		assert.Contains(t, got.all(), fmt.Sprintf("rank=0 master=%s:29500", final.Nodes[0]))

		parsed, err := logparse.Parse(strings.NewReader(strings.Join(got.all(), "\n")), "megatron")
		require.NoError(t, err)
		require.Len(t, parsed.Steps, 5)
		assert.Equal(t, 5, parsed.Steps[4].Step)
	})

	t.Run("two nodes get their own ranks and one master", func(t *testing.T) {
		c := cl.Client()
		job := hostJob(t, "two-nodes", 2, `echo "node=$SLURMD_NODENAME arg=@NODE_RANK@ NODE_RANK=$NODE_RANK PET_NODE_RANK=$PET_NODE_RANK MASTER_ADDR=$MASTER_ADDR PET_MASTER_ADDR=$PET_MASTER_ADDR port=@MASTER_PORT@/$PET_MASTER_PORT nnodes=$PET_NNODES"`)
		job.MasterPort = 29600
		job.NodeHardware = true
		id := submit(t, c, job, nil)
		var got lines
		final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
		require.NoError(t, err)
		assert.Equal(t, cl.Nodes, final.Nodes)
		for rank, node := range cl.Nodes {
			want := fmt.Sprintf("node=%s arg=%d NODE_RANK=%d PET_NODE_RANK=%d MASTER_ADDR=%s PET_MASTER_ADDR=%s port=29600/29600 nnodes=2",
				node, rank, rank, rank, host, host)
			assert.Contains(t, got.all(), want)
		}
		hwNodes, err := slurm.ReadNodeHardware(job.OutputDir)
		require.NoError(t, err)
		require.Len(t, hwNodes, 2)
		for i, n := range hwNodes {
			assert.Equal(t, cl.Nodes[i], n.Node)
			assert.NotEmpty(t, n.Hostname)
		}
	})

	t.Run("failing job reports FAILED and its exit code", func(t *testing.T) {
		c := cl.Client()
		job := hostJob(t, "fails", 1, "echo about to fail; exit 3")
		id := submit(t, c, job, nil)
		var got lines
		final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
		require.Error(t, err)
		var je *slurm.JobError
		require.ErrorAs(t, err, &je)
		assert.Equal(t, slurm.StateFailed, final.State)
		assert.Equal(t, 3, final.ExitCode)
		assert.Contains(t, err.Error(), "FAILED with exit code 3")
		assert.Contains(t, err.Error(), job.LogPath)
		assert.Contains(t, got.all(), "about to fail")
	})

	t.Run("a failing preflight ends the job before the launch on any node", func(t *testing.T) {
		c := cl.Client()
		job := hostJob(t, "preflight", 2, `echo "launched on $SLURMD_NODENAME"`)
		job.Preflight = []string{"bash", "-c", `echo "preflight on $SLURMD_NODENAME"; echo "preflight failed: min_lr above lr"; exit 1`}
		id := submit(t, c, job, nil)
		var got lines
		final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
		require.Error(t, err)
		assert.Equal(t, slurm.StateFailed, final.State)
		assert.Contains(t, got.all(), "preflight on "+cl.Nodes[0], "once, on the first node")
		assert.Contains(t, got.all(), "preflight failed: min_lr above lr")
		for _, l := range got.all() {
			assert.NotContains(t, l, "launched on", "the launch never starts")
			assert.NotContains(t, l, "preflight on "+cl.Nodes[1])
		}

		job = hostJob(t, "preflight-ok", 2, `echo "launched on $SLURMD_NODENAME"`)
		job.Preflight = []string{"bash", "-c", `echo "preflight ok: checked"`}
		id = submit(t, c, job, nil)
		got = lines{}
		final, err = c.Follow(context.Background(), id, job.LogPath, got.add)
		require.NoError(t, err)
		assert.Equal(t, slurm.StateCompleted, final.State)
		all := strings.Join(got.all(), "\n")
		assert.Less(t, strings.Index(all, "preflight ok: checked"), strings.Index(all, "launched on"))
		assert.Equal(t, 1, strings.Count(all, "preflight ok: checked"))
		assert.Equal(t, 2, strings.Count(all, "launched on"))
	})

	t.Run("interrupt cancels the job and leaves no process", func(t *testing.T) {
		c := cl.Client()
		job := hostJob(t, "cancelled", 2, `while true; do echo "tick $SLURMD_NODENAME"; sleep 0.2; done`)
		id := submit(t, c, job, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var got lines
		got.on = func(s string) {
			if strings.HasPrefix(s, "tick") {
				cancel()
			}
		}
		final, err := c.Follow(ctx, id, job.LogPath, got.add)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, slurm.StateCancelled, final.State)
		assert.Contains(t, final.Note, "interrupt")
		assert.Contains(t, err.Error(), "CANCELLED")

		queued, err := cl.Queue()
		require.NoError(t, err)
		assert.NotContains(t, queued, id)
		assert.Eventually(t, func() bool {
			ps, err := cl.JobProcesses()
			return err == nil && len(ps) == 0
		}, 15*time.Second, 200*time.Millisecond, "job processes still alive after CANCELLED")
	})

	t.Run("job pending past the timeout is cancelled and reported", func(t *testing.T) {
		c := cl.Client()
		c.PendingTimeout = 2 * time.Second
		job := hostJob(t, "held", 1, "echo should never run")
		id := submit(t, c, job, func(s string) string {
			return strings.Replace(s, "#SBATCH --nodes=1\n", "#SBATCH --nodes=1\n#SBATCH --hold\n", 1)
		})
		final, err := c.Follow(context.Background(), id, job.LogPath, nil)
		require.Error(t, err)
		var je *slurm.JobError
		require.ErrorAs(t, err, &je)
		assert.Equal(t, slurm.StateCancelled, final.State)
		assert.Contains(t, final.Note, "PENDING")
		assert.Contains(t, err.Error(), "JobHeldUser")
		t.Log(err)
		queued, err := cl.Queue()
		require.NoError(t, err)
		assert.NotContains(t, queued, id)
	})

	t.Run("sbatch refusing a job shows Slurm's error", func(t *testing.T) {
		c := cl.Client()
		job := hostJob(t, "bad-partition", 1, "true")
		job.Partition = "no-such-partition"
		script, err := slurm.Script(job)
		require.NoError(t, err)
		path := filepath.Join(job.OutputDir, "job.sbatch")
		require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
		_, err = c.Submit(context.Background(), path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "sbatch")
		assert.Contains(t, err.Error(), "invalid partition")
	})

	t.Run("docker mode runs one container per node and removes it on cancel", func(t *testing.T) {
		image := probeImage(t)
		c := cl.Client()
		job := hostJob(t, "docker-probe", 2, "")
		job.Container, job.Image = slurm.ContainerDocker, image
		job.Command = []string{"--rank=@NODE_RANK@", "--master=@MASTER_ADDR@:@MASTER_PORT@"}
		job.Env = map[string]string{"RIVAL_PROBE": "it's here"}
		id := submit(t, c, job, nil)
		var got lines
		final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
		require.NoError(t, err, "log:\n%s", strings.Join(got.all(), "\n"))
		assert.Equal(t, slurm.StateCompleted, final.State)
		for rank := range cl.Nodes {
			assert.Contains(t, got.all(), fmt.Sprintf("args=--rank=%d --master=%s:29500", rank, host))
			assert.Contains(t, got.all(), fmt.Sprintf("NODE_RANK=%d", rank))
		}
		assert.Contains(t, got.all(), "MASTER_ADDR="+host)
		assert.Contains(t, got.all(), "RIVAL_PROBE=it's here")
		assert.Contains(t, got.all(), "PET_NNODES=2")
		assert.Empty(t, containers(t, cl.Name, id), "--rm removes finished containers")
		// Each node recorded the ID of the image its daemon ran, which is what docker itself reports.
		want, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", image).Output()
		require.NoError(t, err)
		ran, err := slurm.NodeImageID(job.OutputDir)
		require.NoError(t, err)
		assert.Equal(t, strings.TrimSpace(string(want)), ran)
		recorded, err := filepath.Glob(filepath.Join(job.OutputDir, "nodes", "*", slurm.NodeImageIDName))
		require.NoError(t, err)
		assert.Len(t, recorded, len(cl.Nodes), "one record per node")

		// A node whose daemon lacks the image stops before docker run would pull the tag.
		job = hostJob(t, "docker-missing", 2, "")
		job.Container, job.Image = slurm.ContainerDocker, "rival-test/not-built:nowhere"
		id = submit(t, c, job, nil)
		got = lines{}
		final, err = c.Follow(context.Background(), id, job.LogPath, got.add)
		require.Error(t, err)
		assert.Equal(t, slurm.StateFailed, final.State)
		logText, _ := os.ReadFile(job.LogPath)
		assert.Contains(t, string(logText), "rival: image rival-test/not-built:nowhere is not in the Docker daemon of node", "lines: %q", got.all())

		// A fresh node pulls the image by digest from a registry that needs a login, with the login of
		// the user the job runs as (DOCKER_CONFIG from the environment sbatch ran in).
		reg := registrytest.StartWithAuth(t, "rival", "pull-secret")
		login := t.TempDir()
		docker := func(args ...string) string {
			out, err := exec.Command("docker", append([]string{"--config", login}, args...)...).CombinedOutput()
			require.NoError(t, err, "docker %v: %s", args, out)
			return string(out)
		}
		in := exec.Command("docker", "--config", login, "login", reg, "-u", "rival", "--password-stdin")
		in.Stdin = strings.NewReader("pull-secret")
		out, err := in.CombinedOutput()
		require.NoError(t, err, string(out))
		repo := reg + "/rival-test/slurm-probe"
		docker("tag", image, repo+":pull")
		pushed := regexp.MustCompile(`digest: (sha256:[0-9a-f]{64})`).FindStringSubmatch(docker("push", repo+":pull"))
		require.NotNil(t, pushed, "docker push prints the manifest digest")
		byDigest := repo + "@" + pushed[1]
		forget := func() { // the nodes' daemon no longer holds the registry's image
			_ = exec.Command("docker", "rmi", repo+":pull").Run()
			_ = exec.Command("docker", "rmi", byDigest).Run()
			require.Error(t, exec.Command("docker", "image", "inspect", byDigest).Run(), "%s is gone from the daemon", byDigest)
		}
		forget()
		t.Cleanup(forget)

		job = hostJob(t, "docker-pull", 2, "")
		job.Container, job.Image = slurm.ContainerDocker, byDigest
		job.Command = []string{"--rank=@NODE_RANK@", "--master=@MASTER_ADDR@:@MASTER_PORT@"}
		loggedIn := cl.Client()
		loggedIn.Env = append(append([]string(nil), loggedIn.Env...), "DOCKER_CONFIG="+login)
		id = submit(t, loggedIn, job, nil)
		got = lines{}
		final, err = loggedIn.Follow(context.Background(), id, job.LogPath, got.add)
		logText, _ = os.ReadFile(job.LogPath)
		require.NoError(t, err, "log:\n%s", logText)
		assert.Equal(t, slurm.StateCompleted, final.State)
		assert.Contains(t, string(logText), "pulls "+byDigest)
		for rank := range cl.Nodes {
			assert.Contains(t, got.all(), fmt.Sprintf("args=--rank=%d --master=%s:29500", rank, host))
		}
		want, err = exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", byDigest).Output()
		require.NoError(t, err)
		ran, err = slurm.NodeImageID(job.OutputDir)
		require.NoError(t, err)
		assert.Equal(t, strings.TrimSpace(string(want)), ran, "the nodes ran the pulled image")

		// Without the login the pull is refused with how to log in: TestDockerNodePullsByDigest checks
		// that message with a docker that refuses; this daemon can answer a digest it pulled before
		// from its content store without asking the registry, so it cannot be made to refuse here.

		job = hostJob(t, "docker-cancel", 2, "")
		job.Container, job.Image = slurm.ContainerDocker, image
		job.Command = []string{"--sleepy"}
		job.Env = map[string]string{"PROBE_SLEEP": "60s", "PROBE_IGNORE_TERM": "1"}
		job.DockerRunArgs = []string{"--ulimit", "nofile=1024:1024"}
		id = submit(t, c, job, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got = lines{on: func(s string) {
			if s == "probe alive" {
				cancel()
			}
		}}
		final, err = c.Follow(ctx, id, job.LogPath, got.add)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, slurm.StateCancelled, final.State)
		assert.Eventually(t, func() bool { return len(containers(t, cl.Name, id)) == 0 }, 20*time.Second, 250*time.Millisecond,
			"containers of the cancelled job still exist")
	})

	t.Run("fsdp trainer runs through Slurm in host mode", func(t *testing.T) {
		if out, err := exec.Command(fsdp.DefaultPython, "-c", "import torch, numpy").CombinedOutput(); err != nil {
			t.Skipf("%s cannot import torch and numpy (apt-get install python3-torch python3-numpy libopenblas0-pthread): %s",
				fsdp.DefaultPython, strings.TrimSpace(string(out)))
		}
		c := cl.Client()
		c.Poll = time.Second
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o755))
		scriptPath := filepath.Join(dir, fsdp.ScriptName)
		require.NoError(t, os.WriteFile(scriptPath, fsdp.Script(), 0o644))
		const iters = 4
		cfg := fsdp.Config{
			ScriptPath: scriptPath, DataPrefix: proxyDataset(t, 2048), OrderDir: dir,
			Layers: 2, Hidden: 128, FFN: 344, Heads: 4, KVHeads: 2, Vocab: 2048, RopeTheta: 500000,
			SeqLen: 64, MicroBatch: 4, GradAccum: 2, TrainIters: iters, LR: 3e-3, WarmupSteps: 1,
			WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Seed: 42, Threads: 1, NNodes: 1, DP: 1,
		}
		writeSampleOrder(t, cfg)
		launch, err := fsdp.BuildLaunch(cfg)
		require.NoError(t, err)
		job := slurm.Job{
			Name: "cpu-fsdp-llama-proxy", NNodes: 1, DP: 1, Container: slurm.ContainerNone,
			Command: launch.Command, Env: launch.Env, WorkDir: launch.WorkDir,
			OutputDir: dir, LogPath: filepath.Join(dir, "train.log"), NodeHardware: true,
		}
		id := submit(t, c, job, nil)
		var got lines
		final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
		require.NoError(t, err, "log:\n%s", strings.Join(got.all(), "\n"))
		assert.Equal(t, slurm.StateCompleted, final.State)

		f, err := os.Open(job.LogPath)
		require.NoError(t, err)
		defer f.Close()
		parsed, err := logparse.Parse(f, "megatron")
		require.NoError(t, err)
		require.Len(t, parsed.Steps, iters)
		for i, st := range parsed.Steps {
			assert.Equal(t, i+1, st.Step)
			require.NotNil(t, st.Loss)
			require.NotNil(t, st.StepTimeSeconds)
		}
		assert.Less(t, *parsed.Steps[iters-1].Loss, *parsed.Steps[0].Loss+0.5)
		// What Follow streamed is what the log holds.
		data, err := os.ReadFile(job.LogPath)
		require.NoError(t, err)
		assert.Equal(t, strings.TrimSuffix(string(data), "\n"), strings.Join(got.all(), "\n"))
		nodes, err := slurm.ReadNodeHardware(dir)
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		assert.Equal(t, final.Nodes[0], nodes[0].Node)
	})

	t.Run("prim-shaped and titan-shaped launches get their node's rendezvous", func(t *testing.T) {
		c := cl.Client()
		for _, cell := range []struct{ platform, framework string }{
			{hw.PlatformAMD, core.Prim},     // run_pretrain.sh: the layout from the environment
			{hw.PlatformAMD, core.Titan},    // Primus's torchtitan backend: the same
			{hw.PlatformNVIDIA, core.Titan}, // torchrun: --nnodes, the rest from PET_*
			{hw.PlatformNVIDIA, core.Mega},  // torchrun, Megatron
		} {
			t.Run(cell.platform+"-"+cell.framework, func(t *testing.T) {
				runRendezvousJob(t, c, cl.Nodes, cell.platform, cell.framework)
			})
		}
	})

	// Last: it takes a node down for the rest of the cluster's life.
	t.Run("node failure mid-run is reported as NODE_FAIL", func(t *testing.T) {
		c := cl.Client()
		job := hostJob(t, "node-fail", 2, `while true; do echo "alive $SLURMD_NODENAME"; sleep 0.5; done`)
		id := submit(t, c, job, nil)
		var once sync.Once
		var got lines
		got.on = func(s string) {
			if strings.HasPrefix(s, "alive") {
				once.Do(func() { require.NoError(t, cl.KillNode(cl.Nodes[1])) })
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		final, err := c.Follow(ctx, id, job.LogPath, got.add)
		require.Error(t, err)
		assert.Equal(t, slurm.StateNodeFail, final.State, "err: %v", err)
		assert.Equal(t, []string{cl.Nodes[1]}, final.FailedNodes)
		assert.Contains(t, err.Error(), "NODE_FAIL: node failure on "+cl.Nodes[1])
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		t.Log(err)
	})
}

// probeImage builds a FROM-scratch image holding testdata/probe, or skips when no Docker engine answers.
func probeImage(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v: %s); docker mode is tested where one runs", err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "probe"), "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY probe /probe\nENTRYPOINT [\"/probe\"]\n"), 0o644))
	tag := fmt.Sprintf("rival-test/slurm-probe:%d", os.Getpid())
	out, err = exec.Command("docker", "build", "-q", "-t", tag, dir).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	return tag
}

// containers lists the names of containers a job's nodes started.
func containers(t *testing.T, cluster, jobID string) []string {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "name=rival-"+cluster+"-"+jobID+"-", "--format", "{{.Names}}").Output()
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// proxyDataset writes a small Megatron dataset whose next token follows from the current one.
// writeSampleOrder writes the Megatron sample order the trainer reads into c.OrderDir, as Rival
// does before every fsdp run (tasks/sampleorder.go): the whole dataset, TRAIN_ITERS × GBS samples.
func writeSampleOrder(t *testing.T, c fsdp.Config) {
	t.Helper()
	ds, err := indexed.Open(c.DataPrefix)
	require.NoError(t, err)
	defer ds.Close()
	lengths := ds.Lengths()
	o := gptorder.Order{Seed: uint32(c.Seed), SeqLen: c.SeqLen, AddExtraToken: true,
		NumSamples: int64(c.TrainIters * c.MicroBatch * c.GradAccum * max(1, c.DP))}
	x, err := gptorder.Build(lengths, 0, len(lengths), o)
	require.NoError(t, err)
	require.NoError(t, x.Write(c.OrderDir))
}

func proxyDataset(t *testing.T, vocab int) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	prefix := filepath.Join(dir, "proxy_text_document")
	w, err := indexed.NewWriter(prefix, indexed.DTypeForVocab(vocab))
	require.NoError(t, err)
	defer w.Abort()
	rng := rand.New(rand.NewPCG(7, 9))
	next := rng.Perm(vocab - 1)
	for range 200 {
		doc := []int32{int32(1 + rng.IntN(vocab-1))}
		for n := 50 + rng.IntN(200); len(doc) < n; {
			doc = append(doc, int32(next[doc[len(doc)-1]-1]+1))
		}
		require.NoError(t, w.AddDocument(append(doc, 0)))
	}
	require.NoError(t, w.Finalize())
	return prefix
}

func TestSubmitWithoutSbatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.sbatch")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/bash\ntrue\n"), 0o644))
	c := slurm.Cluster{Env: []string{"PATH="}}
	_, err := c.Submit(context.Background(), path)
	require.Error(t, err)
	assert.True(t, errors.Is(err, slurm.ErrNotInstalled))
	assert.Contains(t, err.Error(), "sbatch not found")
	assert.Contains(t, err.Error(), "not installed or not on PATH")

	c = slurm.Cluster{Sbatch: "/nonexistent/bin/sbatch"}
	_, err = c.Submit(context.Background(), path)
	assert.ErrorIs(t, err, slurm.ErrNotInstalled)
	assert.Contains(t, err.Error(), "/nonexistent/bin/sbatch")
}

// standIn is the trainer a rendezvous job runs instead of the framework: it checks that the per-node
// variables the framework reads arrived with this node's values, prints them, and fails otherwise.
// $1 is the node's expected GPU count; the rest is the framework's own argv, printed as it arrived.
const standIn = `set -u
fail() { echo "stand-in on $SLURMD_NODENAME: $*" >&2; exit 7; }
gpus=$1; shift
[ "${NODE_RANK-}" = "$SLURM_NODEID" ] || fail "NODE_RANK=${NODE_RANK-unset}, SLURM_NODEID=$SLURM_NODEID"
[ "${PET_NODE_RANK-}" = "$SLURM_NODEID" ] || fail "PET_NODE_RANK=${PET_NODE_RANK-unset}"
[ "${NNODES-}" = "$SLURM_JOB_NUM_NODES" ] || fail "NNODES=${NNODES-unset}, nodes=$SLURM_JOB_NUM_NODES"
[ "${PET_NNODES-}" = "$NNODES" ] || fail "PET_NNODES=${PET_NNODES-unset}"
[ "${GPUS_PER_NODE-}" = "$gpus" ] || fail "GPUS_PER_NODE=${GPUS_PER_NODE-unset}, want $gpus"
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
[ "${MASTER_ADDR-}" = "$first" ] || fail "MASTER_ADDR=${MASTER_ADDR-unset}, first host $first"
[ "${PET_MASTER_ADDR-}" = "$first" ] || fail "PET_MASTER_ADDR=${PET_MASTER_ADDR-unset}"
[ "${MASTER_PORT-}" = 29500 ] && [ "${PET_MASTER_PORT-}" = 29500 ] || fail "MASTER_PORT=${MASTER_PORT-unset}"
echo "rendezvous node=$SLURMD_NODENAME NODE_RANK=$NODE_RANK NNODES=$NNODES GPUS_PER_NODE=$GPUS_PER_NODE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"
printf argv; printf ' %q' "$@"; echo
`

// runRendezvousJob builds the real launch of one framework for two nodes of 2 GPUs, turns it into the
// Slurm job the executor submits, and runs that job on the test cluster with the stand-in in place of
// the framework's executable and on the hosts rather than in the image (the only change, besides
// dropping --gpus-per-node, which a cluster without GPUs cannot grant, and the preflight step).
func runRendezvousJob(t *testing.T, c slurm.Cluster, nodes []string, platform, framework string) {
	const nnodes, gpus = 2, 2
	host := hw.Host{Platform: platform, GPUs: []hw.GPU{{Index: 0}, {Index: 1}}}
	l, err := frameworks.Build(core.Request{Platform: platform, Framework: framework, Model: "llama-proxy", Host: host,
		NNodes: nnodes, Fair: core.Fair{Seed: 42, MBS: 1, SL: 256, GA: 2, GBS: 8, TP: 1, PP: 1, DP: nnodes * gpus,
			TrainIters: 3, WarmupSteps: 1, LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: "bf16"},
		DataPrefix: "/rival/data/bc", TokenizerPath: "/rival/tokenizer", OutputDir: "/rival/run", DataCacheDir: "/rival/cache"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	ex := &executor.Slurm{Platform: platform, NNodes: nnodes, GPUsPerNode: gpus, DP: nnodes * gpus, Image: "rival/test@sha256:" + strings.Repeat("0", 64)}
	job, _, err := ex.Job(l, []executor.PathMap{{Host: dir, Inside: "/rival/run", Role: "run"}})
	require.NoError(t, err, "the executor's job for %s %s", platform, framework)
	standInPath := filepath.Join(dir, "stand-in.sh")
	require.NoError(t, os.WriteFile(standInPath, []byte(standIn), 0o755))
	job.Container, job.Mounts, job.DockerRunArgs, job.WorkDir, job.NodeHardware = slurm.ContainerNone, nil, nil, dir, false
	if l.Preflight != nil {
		require.NotEmpty(t, job.Preflight, "the executor's job runs the launch's preflight first")
	}
	job.Preflight = nil // its files are not written here; the preflight step has its own subtest
	job.Command = append([]string{"bash", standInPath, fmt.Sprint(gpus)}, job.Command...)
	id := submit(t, c, job, func(s string) string {
		return strings.Replace(s, fmt.Sprintf("#SBATCH --gpus-per-node=%d\n", gpus), "", 1)
	})
	var got lines
	final, err := c.Follow(context.Background(), id, job.LogPath, got.add)
	require.NoError(t, err, "log:\n%s", strings.Join(got.all(), "\n"))
	assert.Equal(t, slurm.StateCompleted, final.State)
	// Slurm relays each task's output to the log in messages of bounded size, so one node's long
	// argv line can arrive cut around the other node's short rendezvous line: the short line is
	// whole, but not always a line of its own. Search the whole log.
	log := strings.Join(got.all(), "\n")
	for rank, node := range nodes {
		assert.Contains(t, log, fmt.Sprintf("rendezvous node=%s NODE_RANK=%d NNODES=2 GPUS_PER_NODE=2 MASTER_ADDR=%s MASTER_PORT=29500",
			node, rank, nodes[0]))
	}
	if !l.Rendezvous.Env {
		// torchrun's own flags carry the layout. The argv may span lines (mega's launch is a bash -c
		// script that finds pretrain_gpt.py, then torchrun), so the whole log is searched, per node.
		assert.GreaterOrEqual(t, strings.Count(log, "--nnodes=2"), len(nodes), log)
		assert.GreaterOrEqual(t, strings.Count(log, "--nproc_per_node=2"), len(nodes), log)
	}
}
