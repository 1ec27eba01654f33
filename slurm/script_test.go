package slurm

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current Script output")

// torchrunLaunch is a single-node torchrun launch as frameworks/ builds it, to be made per-node.
var torchrunLaunch = []string{"torchrun", "--nnodes=4", "--node_rank=0", "--master_addr=localhost", "--master_port=29500",
	"--nproc_per_node=8", "/workspace/Megatron-LM/pretrain_gpt.py", "--tensor-model-parallel-size", "2",
	"--data-path", "/data/llama/train_text_document", "--data-cache-path", "/cache/idx-3f2a",
	"--lr", "3e-4", "--exit-signal-handler"}

// goldenJobs are representative jobs, one per container mode, each with the features it exercises.
var goldenJobs = map[string]Job{
	"pyxis-nvd-mega-4x8": {
		Name: "nvd-mega-llama", NNodes: 4, GPUsPerNode: 8, TP: 2, PP: 1, DP: 16,
		Partition: "gpu", Account: "bench", Time: "4:00:00",
		Image: "nvcr.io#nvidia/nemo:25.02", Container: ContainerPyxis,
		Command: PerNodeArgs(torchrunLaunch), WorkDir: "/workspace/Megatron-LM",
		Env:     map[string]string{"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_DEBUG": "WARN", "RIVAL_NOTE": "it's a \"quoted\" $value"},
		PassEnv: []string{"HF_TOKEN"},
		Mounts: []Mount{{Host: "/shared/data", Container: "/data", ReadOnly: true},
			{Host: "/shared/cache", Container: "/cache"}},
		OutputDir: "/shared/rival/runs/nvd-mega-llama", LogPath: "/shared/rival/runs/nvd-mega-llama/train.log",
		NodeHardware: true,
	},
	"docker-amd-prim-2x8": {
		Name: "amd-prim-qwen", NNodes: 2, GPUsPerNode: 8, TP: 1, PP: 1, DP: 16,
		Image: "rival/amd@sha256:0f3c5e", Container: ContainerDocker,
		Command:    []string{"bash", "/workspace/Primus/examples/run_pretrain.sh", "--train_iters", "50"},
		WorkDir:    "/workspace/Primus",
		Env:        map[string]string{"EXP": "/run/qwen2.5_7B-pretrain.yaml", "GPUS_PER_NODE_NOTE": "8"},
		Mounts:     []Mount{{Host: "/shared/data", Container: "/data", ReadOnly: true}},
		MasterPort: 29700,
		OutputDir:  "/shared/rival/runs/amd-prim-qwen", LogPath: "/shared/rival/runs/amd-prim-qwen/train.log",
		DockerRunArgs: []string{"--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video",
			"--shm-size", "64g", "--ulimit", "memlock=-1"},
	},
	// The image as image:push records it: a registry reference by digest, pulled by each node that lacks it.
	"docker-amd-mega-digest-2x8": {
		Name: "amd-mega-llama", NNodes: 2, GPUsPerNode: 8, TP: 1, PP: 1, DP: 16,
		Image:     "registry.example:5000/rival/amd@sha256:" + strings.Repeat("3f", 32),
		Container: ContainerDocker,
		Command:   []string{"bash", "-c", "exec torchrun \"$@\"", "--nnodes=2", "--nproc_per_node=8"},
		Mounts:    []Mount{{Host: "/shared/data", Container: "/data", ReadOnly: true}},
		OutputDir: "/shared/rival/runs/amd-mega-llama", LogPath: "/shared/rival/runs/amd-mega-llama/train.log",
		DockerRunArgs: []string{"--device", "/dev/kfd", "--device", "/dev/dri"},
	},
	"none-cpu-fsdp-1": {
		Name: "cpu-fsdp-llama-proxy", NNodes: 1, Container: ContainerNone,
		Command:   []string{"/usr/bin/python3", "/shared/rival/train.py", "--layers", "2", "--seq-len", "64"},
		Env:       map[string]string{"PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "42", "OMP_NUM_THREADS": "1"},
		OutputDir: "/shared/rival/runs/cpu", LogPath: "/shared/rival/runs/cpu/train.log",
	},
}

func TestScriptGolden(t *testing.T) {
	for name, job := range goldenJobs {
		t.Run(name, func(t *testing.T) {
			got, err := Script(job)
			require.NoError(t, err)
			path := filepath.Join("testdata", "golden", name+".sbatch")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./slurm -run TestScriptGolden -update to create it")
			assert.Equal(t, string(want), got, "rerun with -update if the change is intended")
			if bash, err := exec.LookPath("bash"); err == nil {
				out, err := exec.Command(bash, "-n", path).CombinedOutput()
				assert.NoError(t, err, "bash -n %s: %s", path, out)
			}
		})
	}
}

// TestScriptRunsPerNode runs the generated script's per-node part under bash with Slurm's variables
// set by hand, proving the placeholders and exports reach the command with its words intact.
func TestScriptRunsPerNode(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	// Fake srun and scontrol on PATH: srun runs its command once as node 1, scontrol names two hosts.
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "srun"), []byte("#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\nSLURM_NODEID=1 exec \"$@\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\nprintf 'gpu07\\ngpu08\\n'\n"), 0o755))
	tricky := "a b 'c' \"d\" $HOME `e` \\f\n@NODE_RANK@"
	job := Job{Name: "probe", NNodes: 2, Container: ContainerNone, MasterPort: 29999,
		Command: []string{"printf", "[%s]\\n", "--node_rank=" + NodeRankArg, "--master_addr=" + MasterAddrArg,
			"--master_port=" + MasterPortArg, tricky},
		Env:       map[string]string{"RIVAL_X": tricky},
		OutputDir: dir, LogPath: filepath.Join(dir, "log")}
	script, err := Script(job)
	require.NoError(t, err)
	path := filepath.Join(dir, "job.sbatch")
	require.NoError(t, os.WriteFile(path, []byte(script+"\necho \"env=[$RIVAL_X] rank=[${NODE_RANK:-unset}]\"\n"), 0o755))
	cmd := exec.Command(bash, path)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "SLURM_JOB_NODELIST=gpu[07-08]", "SLURM_JOB_ID=12",
		"SLURM_CPUS_ON_NODE=4", "HOME=/home/x"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "rival: job 12 on gpu[07-08], master gpu07:29999\n"+
		"[--node_rank=1]\n[--master_addr=gpu07]\n[--master_port=29999]\n"+
		"[a b 'c' \"d\" $HOME `e` \\f\n1]\n"+
		"env=[a b 'c' \"d\" $HOME `e` \\f\n@NODE_RANK@] rank=[unset]\n", string(out))
}

func TestScriptRefuses(t *testing.T) {
	base := goldenJobs["none-cpu-fsdp-1"]
	cases := []struct {
		name string
		edit func(*Job)
		want string
	}{
		{"layout", func(j *Job) { j.NNodes, j.GPUsPerNode, j.TP, j.DP = 2, 8, 2, 4 }, "TP=2 × PP=1 × DP=4 = 8"},
		{"no nodes", func(j *Job) { j.NNodes = 0 }, "NNODES is 0"},
		{"name", func(j *Job) { j.Name = "a b" }, "job Name"},
		{"partition", func(j *Job) { j.Partition = "gpu;rm" }, "Partition"},
		{"time", func(j *Job) { j.Time = "1 hour" }, "Time"},
		{"relative log", func(j *Job) { j.LogPath = "train.log" }, "LogPath"},
		{"log pattern", func(j *Job) { j.LogPath = "/shared/%j.log" }, "LogPath"},
		{"output with space", func(j *Job) { j.OutputDir = "/shared/my runs" }, "OutputDir"},
		{"empty command", func(j *Job) { j.Command = nil }, "Command is empty"},
		{"nul", func(j *Job) { j.Command = []string{"a\x00b"} }, "NUL"},
		{"mode", func(j *Job) { j.Container = "podman" }, `Container "podman"`},
		{"pyxis image", func(j *Job) { j.Container, j.Image = ContainerPyxis, "" }, "needs an image"},
		{"host mounts", func(j *Job) { j.Mounts = []Mount{{Host: "/a", Container: "/a"}} }, "Mounts given"},
		{"mount colon", func(j *Job) {
			j.Container, j.Image, j.Mounts = ContainerDocker, "img", []Mount{{Host: "/a:b", Container: "/a"}}
		}, "Mounts[0]"},
		{"docker args", func(j *Job) { j.DockerRunArgs = []string{"--gpus", "all"} }, "DockerRunArgs"},
		{"secret", func(j *Job) { j.Env = map[string]string{"HF_TOKEN": "hf_abc"} }, "PassEnv"},
		{"secret lower", func(j *Job) { j.Env = map[string]string{"wandb_api_key": "x"} }, "secret"},
		{"env name", func(j *Job) { j.Env = map[string]string{"A-B": "x"} }, "not a shell variable"},
		{"reserved", func(j *Job) { j.Env = map[string]string{"NODE_RANK": "0"} }, "set by the script"},
		{"both", func(j *Job) { j.Env, j.PassEnv = map[string]string{"X": "1"}, []string{"X"} }, "both Env and PassEnv"},
		{"port", func(j *Job) { j.MasterPort = 70000 }, "MasterPort"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := base
			j.Env = map[string]string{}
			c.edit(&j)
			_, err := Script(j)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "hf_abc", "a secret's value must never reach a message")
		})
	}
}

func TestScriptNeverHoldsPassedSecrets(t *testing.T) {
	j := goldenJobs["pyxis-nvd-mega-4x8"]
	t.Setenv("HF_TOKEN", "hf_secretvalue")
	s, err := Script(j)
	require.NoError(t, err)
	assert.NotContains(t, s, "hf_secretvalue")
	assert.Contains(t, s, "export HF_TOKEN\n")
}

func TestCheck(t *testing.T) {
	cases := []struct {
		nnodes, gpus, tp, pp, dp int
		want                     string // "" for accepted
	}{
		{1, 8, 1, 1, 8, ""},
		{4, 8, 2, 2, 8, ""},
		{2, 8, 1, 1, 0, ""},
		{1, 0, 0, 0, 0, ""},
		{2, 0, 1, 1, 2, ""},
		{2, 8, 1, 1, 8, "set DP=16"},
		{2, 8, 3, 1, 0, "do not split"},
		{2, 8, 3, 1, 5, "change NNODES, TP, PP or DP"},
		{2, 0, 1, 1, 1, "CPU nodes"},
		{-1, 8, 1, 1, 1, ">= 0"},
		{0, 8, 1, 1, 1, "NNODES is 0"},
	}
	for _, c := range cases {
		err := Check(c.nnodes, c.gpus, c.tp, c.pp, c.dp)
		if c.want == "" {
			assert.NoError(t, err, "%+v", c)
			continue
		}
		if assert.Error(t, err, "%+v", c) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

func TestPerNodeArgs(t *testing.T) {
	in := []string{"torchrun", "--nnodes=2", "--node_rank=0", "--master_addr", "h", "--master-port", "1",
		"--node-rank", "3", "--nproc_per_node=8", "x.py", "--master_port"}
	got := PerNodeArgs(in)
	assert.Equal(t, []string{"torchrun", "--nnodes=2", "--node_rank=@NODE_RANK@", "--master_addr", "@MASTER_ADDR@",
		"--master-port", "@MASTER_PORT@", "--node-rank", "@NODE_RANK@", "--nproc_per_node=8", "x.py", "--master_port"}, got)
	assert.Equal(t, "--node_rank=0", in[2], "the input is not modified")
}

func TestQuoteRoundTripsThroughBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	words := []string{"", "plain", "a b", "it's", `"`, "$HOME", "`id`", `\`, "\n", "*", "~", "#x", "a=b", "--flag=v", "@NODE_RANK@",
		"!x", "{a,b}", "ü", "'", "''", "%j", ";", "&&", "\t"}
	var script strings.Builder
	for _, w := range words {
		script.WriteString("printf '%s\\0' " + quote(w) + "\n")
	}
	out, err := exec.Command(bash, "-c", script.String()).Output()
	require.NoError(t, err)
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	assert.Equal(t, words, got)
}

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{"HF_TOKEN": true, "hf_token": true, "AWS_SECRET_ACCESS_KEY": true,
		"WANDB_API_KEY": true, "DB_PASSWORD": true, "NCCL_DEBUG": false, "HF_HOME": false, "KEY_PATH": false} {
		assert.Equal(t, want, IsSecretName(name), name)
	}
}
