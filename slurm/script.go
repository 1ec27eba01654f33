package slurm

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

// Container modes: how each node's task runs the image.
const (
	ContainerPyxis  = "pyxis"  // srun --container-image (NVIDIA's pyxis/enroot plugin)
	ContainerDocker = "docker" // one `docker run` per node
	ContainerNone   = "none"   // on the host, no image (the fsdp trainer on CPU)
)

// Placeholders a Job's Command may carry where a node's own value belongs. The script replaces them
// on each node before running the command, so one Command serves every node.
const (
	NodeRankArg   = "@NODE_RANK@"   // this node's rank, SLURM_NODEID
	MasterAddrArg = "@MASTER_ADDR@" // the first host of the allocation
	MasterPortArg = "@MASTER_PORT@" // Job.MasterPort
)

// Mount makes a host path visible inside the container.
type Mount struct {
	Host, Container string
	ReadOnly        bool
}

// Job is one multi-node benchmark run as Slurm will run it.
type Job struct {
	Name        string // job name (letters, digits, . _ + -)
	NNodes      int    // nodes, >= 1
	GPUsPerNode int    // GPUs per node; 0: a CPU run (no --gpus-per-node)
	// TP, PP, DP are the run's parallel layout, checked against NNodes × GPUsPerNode before anything
	// is written; 0 for TP or PP reads as 1, DP 0 as "whatever is left" (which must divide evenly).
	TP, PP, DP int

	Partition, Account string // empty: the cluster's defaults
	Time               string // time limit in Slurm's syntax ("2:00:00", "1-00:00:00"); empty: the partition's

	Image     string // the platform image; pyxis takes enroot's syntax (nvcr.io#nvidia/nemo:25.02 or a .sqsh)
	Container string // ContainerPyxis, ContainerDocker or ContainerNone
	// Command is the per-node framework launch (built by frameworks/), Command[0] the executable. It may
	// carry NodeRankArg, MasterAddrArg and MasterPortArg; PerNodeArgs rewrites torchrun's flags to them.
	Command []string
	WorkDir string // directory the command runs in (inside the container); empty: the image's or OutputDir

	// Env is exported to every node's task. Names that look like secrets (TOKEN, SECRET, PASSWORD,
	// CREDENTIAL, API_KEY) are refused here because the script is a readable file: list them in
	// PassEnv instead.
	Env map[string]string
	// PassEnv names variables forwarded from the environment sbatch runs in, by name only: their values
	// never enter the script. This is the explicit allowance for secrets such as HF_TOKEN.
	PassEnv []string

	Mounts        []Mount
	MasterPort    int      // 0: core.DefaultMasterPort
	OutputDir     string   // absolute; must be visible on every node (shared filesystem)
	LogPath       string   // absolute; the job's stdout and stderr (sbatch --output)
	DockerRunArgs []string // docker mode: device, ulimit, shm flags (e.g. --gpus all, --device /dev/kfd)

	// Preflight, when set, runs once on the first node, in the same container, mounts and environment,
	// after the node-hardware step and before Command: the framework's own validation of the launch
	// (core.Launch.Preflight). A non-zero exit ends the job before torchrun starts.
	Preflight []string

	// NodeHardware runs a first step on every node that records its hostname and GPU tools' output
	// under OutputDir/nodes/<node>/ (see ReadNodeHardware). Best effort: a failure does not fail the job.
	NodeHardware bool
	// PowerPlatform ("nvidia" or "amd"), when set, has every node sample its GPUs' board power
	// into OutputDir/nodes/<node>/power.log while the launch runs (see nodePower, ReadNodePower).
	PowerPlatform string
}

// Check refuses a layout whose process count differs from its shards: NNODES × processes per node
// must equal TP × PP × DP. gpusPerNode 0 is a CPU run with one process per node; tp and pp 0 read as
// 1; dp 0 asks for the remainder, which must then divide evenly.
func Check(nnodes, gpusPerNode, tp, pp, dp int) error {
	for _, v := range []struct {
		name string
		v    int
	}{{"NNODES", nnodes}, {"GPUs per node", gpusPerNode}, {"TP", tp}, {"PP", pp}, {"DP", dp}} {
		if v.v < 0 {
			return fmt.Errorf("slurm: %s is %d: it must be >= 0", v.name, v.v)
		}
	}
	if nnodes == 0 {
		return errors.New("slurm: NNODES is 0: a job needs at least one node")
	}
	tp, pp = max(tp, 1), max(pp, 1)
	perNode := max(gpusPerNode, 1)
	world := nnodes * perNode
	what := fmt.Sprintf("NNODES=%d × %d GPUs per node = %d processes", nnodes, gpusPerNode, world)
	if gpusPerNode == 0 {
		what = fmt.Sprintf("NNODES=%d CPU nodes × 1 process = %d processes", nnodes, world)
	}
	if dp == 0 {
		if world%(tp*pp) != 0 {
			return fmt.Errorf("slurm: %s do not split into TP=%d × PP=%d model shards: change TP, PP or NNODES", what, tp, pp)
		}
		return nil
	}
	if tp*pp*dp == world {
		return nil
	}
	hint := "change NNODES, TP, PP or DP"
	if world%(tp*pp) == 0 {
		hint = fmt.Sprintf("set DP=%d (or change NNODES)", world/(tp*pp))
	}
	return fmt.Errorf("slurm: %s, but TP=%d × PP=%d × DP=%d = %d: each process holds one shard, so the two must be equal; %s",
		what, tp, pp, dp, tp*pp*dp, hint)
}

// PerNodeArgs returns a copy of a single-node launch command with torchrun's per-node flags
// (--node_rank, --master_addr, --master_port, in either --flag=value or --flag value form and with
// dashes or underscores) set to the placeholders the script fills in on each node.
func PerNodeArgs(cmd []string) []string {
	out := slices.Clone(cmd)
	flags := map[string]string{
		"--node_rank": NodeRankArg, "--node-rank": NodeRankArg,
		"--master_addr": MasterAddrArg, "--master-addr": MasterAddrArg,
		"--master_port": MasterPortArg, "--master-port": MasterPortArg,
	}
	for i := 0; i < len(out); i++ {
		name, _, hasValue := strings.Cut(out[i], "=")
		ph, ok := flags[name]
		if !ok {
			continue
		}
		if hasValue {
			out[i] = name + "=" + ph
		} else if i+1 < len(out) {
			out[i+1] = ph
			i++
		}
	}
	return out
}

// Validation patterns. #SBATCH lines are split by sbatch itself, not by a shell, so their values
// are restricted to characters that need no quoting; shell lines quote everything.
var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
	sbatchRE  = regexp.MustCompile(`^[A-Za-z0-9._+,:-]+$`) // partition lists, accounts, time limits
	envKeyRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sbPathRE  = regexp.MustCompile(`^/[A-Za-z0-9._+,:=@/-]*$`) // a path sbatch reads: no spaces, quotes or % patterns
	secretREs = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY", "PRIVATE_KEY"}
)

// IsSecretName reports whether an environment variable's name marks it as a secret, whose value must
// never be written into a script or a log.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, s := range secretREs {
		if strings.Contains(up, s) {
			return true
		}
	}
	return false
}

// reservedName reports whether the script sets name itself, so Env must not: the rendezvous
// variables (core.RendezvousVars and their PET_ forms) and the script's own.
func reservedName(name string) bool {
	return core.IsRendezvousVar(name) || name == "RIVAL_NODE" || name == "RIVAL_NODE_HW"
}

func validate(j Job) (Job, error) {
	if err := Check(j.NNodes, j.GPUsPerNode, j.TP, j.PP, j.DP); err != nil {
		return j, err
	}
	if !nameRE.MatchString(j.Name) {
		return j, fmt.Errorf("slurm: job Name %q: use letters, digits, '.', '_', '+' or '-'", j.Name)
	}
	for _, f := range []struct{ name, v string }{{"Partition", j.Partition}, {"Account", j.Account}, {"Time", j.Time}} {
		if f.v != "" && !sbatchRE.MatchString(f.v) {
			return j, fmt.Errorf("slurm: %s %q: sbatch reads it unquoted, so use letters, digits and . _ + , : - only", f.name, f.v)
		}
	}
	for _, p := range []struct{ name, v string }{{"OutputDir", j.OutputDir}, {"LogPath", j.LogPath}} {
		if p.v == "" {
			return j, fmt.Errorf("slurm: %s is empty: give an absolute path on a filesystem every node sees", p.name)
		}
		if !sbPathRE.MatchString(p.v) || filepath.Clean(p.v) != p.v {
			return j, fmt.Errorf("slurm: %s %q: want a clean absolute path without spaces, quotes or %% (sbatch reads it unquoted and expands %%)", p.name, p.v)
		}
	}
	if j.WorkDir != "" && !filepath.IsAbs(j.WorkDir) {
		return j, fmt.Errorf("slurm: WorkDir %q is not absolute", j.WorkDir)
	}
	if len(j.Command) == 0 || j.Command[0] == "" {
		return j, errors.New("slurm: Command is empty: pass the framework's launch (frameworks/ builds it)")
	}
	for i, a := range j.Command {
		if strings.ContainsRune(a, 0) {
			return j, fmt.Errorf("slurm: Command[%d] contains a NUL byte", i)
		}
	}
	switch j.Container {
	case ContainerPyxis, ContainerDocker:
		if j.Image == "" || strings.ContainsAny(j.Image, " \t\n'\"") {
			return j, fmt.Errorf("slurm: Image %q: container mode %q needs an image reference without spaces or quotes", j.Image, j.Container)
		}
	case ContainerNone:
		if len(j.Mounts) > 0 {
			return j, errors.New("slurm: Mounts given with Container \"none\": the host sees its own paths; drop them or pick a container mode")
		}
	default:
		return j, fmt.Errorf("slurm: Container %q: want %q, %q or %q", j.Container, ContainerPyxis, ContainerDocker, ContainerNone)
	}
	if j.Container != ContainerDocker && len(j.DockerRunArgs) > 0 {
		return j, fmt.Errorf("slurm: DockerRunArgs given with Container %q: they only apply to %q", j.Container, ContainerDocker)
	}
	for i, m := range j.Mounts {
		for _, p := range []string{m.Host, m.Container} {
			// pyxis separates mounts with ',' and fields with ':'; docker -v uses ':' too.
			if !filepath.IsAbs(p) || strings.ContainsAny(p, ",:\n") {
				return j, fmt.Errorf("slurm: Mounts[%d] %q:%q: both sides must be absolute paths without ',', ':' or newlines", i, m.Host, m.Container)
			}
		}
	}
	for k := range j.Env {
		if !envKeyRE.MatchString(k) {
			return j, fmt.Errorf("slurm: Env key %q is not a shell variable name", k)
		}
		if IsSecretName(k) {
			return j, fmt.Errorf("slurm: Env key %s looks like a secret and the script is a readable file: list it in PassEnv so it is forwarded from the submitting environment by name", k)
		}
		if reservedName(k) {
			return j, fmt.Errorf("slurm: Env key %s is set by the script itself, per node: a launch states what it needs in Launch.Rendezvous", k)
		}
	}
	for _, k := range j.PassEnv {
		if !envKeyRE.MatchString(k) {
			return j, fmt.Errorf("slurm: PassEnv name %q is not a shell variable name", k)
		}
		if _, dup := j.Env[k]; dup {
			return j, fmt.Errorf("slurm: %s is in both Env and PassEnv: keep one", k)
		}
		if reservedName(k) {
			return j, fmt.Errorf("slurm: PassEnv name %s is set by the script itself, per node", k)
		}
	}
	if j.MasterPort == 0 {
		j.MasterPort = core.DefaultMasterPort
	}
	if j.MasterPort < 1 || j.MasterPort > 65535 {
		return j, fmt.Errorf("slurm: MasterPort %d is not a TCP port", j.MasterPort)
	}
	return j, nil
}

// nodeScript runs once per node inside srun: it sets this node's rank and fills the placeholders.
// It reads its command from "$@", so the command's words are never re-parsed by a shell.
const nodeScript = `args=()
for a in "$@"; do
  a=${a//@NODE_RANK@/"$NODE_RANK"}
  a=${a//@MASTER_ADDR@/"$MASTER_ADDR"}
  a=${a//@MASTER_PORT@/"$MASTER_PORT"}
  args+=("$a")
done
`

const nodeExec = `exec "${args[@]}"
`

// The docker client does not stop its container when killed, so a cancelled task removes it by name.
const nodeDocker = `name="rival-${SLURM_CLUSTER_NAME:-slurm}-${SLURM_JOB_ID}-${SLURM_NODEID}"
trap 'docker rm -f "$name" >/dev/null 2>&1; exit 143' TERM INT
docker run --rm --name "$name" "${args[@]}" &
wait $!
`

// NodeImageIDName is the file under OutputDir/nodes/<node>/ where a docker-mode node records the ID
// of the image it runs (`docker image inspect -f {{.Id}}` of Job.Image in that node's daemon).
const NodeImageIDName = "image-id.txt"

// digestRE is an image reference pinned by digest: name@sha256:<64 hex>.
var digestRE = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)

// IsDigestRef reports whether an image reference names its image by digest (name@sha256:…), which
// a node can pull and verify without trusting a tag.
func IsDigestRef(image string) bool { return digestRE.MatchString(image) }

// nodeImageID records the ID of Job.Image in this node's Docker daemon before the node runs it. When
// the daemon lacks the image and Job.Image is a digest reference, the node pulls it (docker pull with
// the credentials of the user the job runs as: ~/.docker/config.json or $DOCKER_CONFIG, as
// docker login wrote them) and checks that the daemon now holds that digest. A tag reference is never
// pulled: the node stops, since a tag could pull another build. The message is one write followed by
// a pause: with --kill-on-bad-exit, srun tears the step down as soon as a task fails and can drop
// output the failing task wrote just before exiting.
func nodeImageID(j Job) string {
	d := quote(filepath.Join(j.OutputDir, "nodes")) + `/"$SLURMD_NODENAME"`
	img := quote(j.Image)
	shown := strings.ReplaceAll(j.Image, `"`, ``)
	missing := `  echo "rival: image ` + shown + ` is not in the Docker daemon of node $SLURMD_NODENAME ($id): load it there, or push it from the host that built it with go run mage.go image:push PLATFORM REGISTRY/REPOSITORY, which runs it by digest" >&2
  sleep 1
  exit 1
`
	if IsDigestRef(j.Image) {
		digest := j.Image[strings.LastIndex(j.Image, "@")+1:]
		missing = `  echo "rival: node $SLURMD_NODENAME pulls ` + shown + `" >&2
  if ! out=$(docker pull ` + img + ` 2>&1); then
    echo "rival: docker pull ` + shown + ` failed on node $SLURMD_NODENAME: $out: log in to the registry on that node as the user the job runs as (docker login writes ~/.docker/config.json) or load the image there" >&2
    sleep 1
    exit 1
  fi
  digests=$(docker image inspect -f '{{range .RepoDigests}}{{println .}}{{end}}' ` + img + ` 2>&1 || true)
  case "$digests" in
  *@` + digest + `*) ;;
  *)
    echo "rival: node $SLURMD_NODENAME pulled ` + shown + ` but its daemon holds digests [$digests], not ` + digest + `" >&2
    sleep 1
    exit 1
    ;;
  esac
  id=$(docker image inspect -f '{{.Id}}' ` + img + `)
`
	}
	return `d=` + d + `
mkdir -p "$d"
if ! id=$(docker image inspect -f '{{.Id}}' ` + img + ` 2>&1); then
` + missing + `fi
printf '%s\n' "$id" > "$d/` + NodeImageIDName + `.tmp" && mv "$d/` + NodeImageIDName + `.tmp" "$d/` + NodeImageIDName + `"
`
}

// nodeHardware records one node's hardware under "$1/<node>/", each file written whole or not at all.
func nodeHardware() string {
	q := func(args []string) string { return quoteAll(args) }
	return `d="$1/$SLURMD_NODENAME"
mkdir -p "$d"
hostname > "$d/hostname.txt.tmp" && mv "$d/hostname.txt.tmp" "$d/hostname.txt"
if command -v nvidia-smi >/dev/null 2>&1; then
  { nvidia-smi ` + q(hw.NvidiaQueryArgs()) + ` || nvidia-smi ` + q(hw.NvidiaBaseQueryArgs()) + `; } > "$d/nvidia-smi.csv.tmp" 2>/dev/null &&
    mv "$d/nvidia-smi.csv.tmp" "$d/nvidia-smi.csv"
fi
if command -v amd-smi >/dev/null 2>&1; then
  amd-smi ` + q(hw.AMDSMIStaticArgs()) + ` > "$d/amd-smi-static.json.tmp" 2>/dev/null && mv "$d/amd-smi-static.json.tmp" "$d/amd-smi-static.json"
elif command -v rocm-smi >/dev/null 2>&1; then
  rocm-smi ` + q(hw.ROCmSMIArgs()) + ` > "$d/rocm-smi.json.tmp" 2>/dev/null && mv "$d/rocm-smi.json.tmp" "$d/rocm-smi.json"
fi
rm -f "$d"/*.tmp
`
}

// Script validates job and returns its sbatch script. Every value that reaches a shell is
// single-quoted; values sbatch reads from #SBATCH lines are restricted to characters that need none.
func Script(job Job) (string, error) {
	j, err := validate(job)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	gpus := "CPU only"
	if j.GPUsPerNode > 0 {
		gpus = fmt.Sprintf("%d GPU(s) per node", j.GPUsPerNode)
	}
	w("#!/bin/bash\n")
	w("# Rival benchmark job %s: %d node(s), %s, container mode %q.\n", j.Name, j.NNodes, gpus, j.Container)
	w("# Generated by Rival; submit it with `sbatch <this file>`. OutputDir and LogPath must be on a\n")
	w("# filesystem every node sees, and so must DATA_DIR: it holds the datasets and the Megatron index\n")
	w("# cache that global rank 0 builds and every other rank reads.\n")
	if j.Container == ContainerDocker {
		if IsDigestRef(j.Image) {
			w("# Each node runs the image by digest; a node whose Docker daemon lacks it pulls it with the\n")
			w("# registry credentials of the user the job runs as (docker login on that node) and checks the digest.\n")
		} else {
			w("# Each node's Docker daemon must already hold the image: a tag is never pulled (run by digest to pull).\n")
		}
	}
	w("#SBATCH --job-name=%s\n", j.Name)
	w("#SBATCH --nodes=%d\n", j.NNodes)
	w("#SBATCH --ntasks-per-node=1\n")
	if j.GPUsPerNode > 0 {
		w("#SBATCH --gpus-per-node=%d\n", j.GPUsPerNode)
	}
	// Whole nodes: a benchmark that shares its nodes measures its neighbours too.
	w("#SBATCH --exclusive\n")
	// A node failure ends the run as NODE_FAIL instead of silently restarting it on other nodes.
	w("#SBATCH --no-requeue\n")
	if j.Partition != "" {
		w("#SBATCH --partition=%s\n", j.Partition)
	}
	if j.Account != "" {
		w("#SBATCH --account=%s\n", j.Account)
	}
	if j.Time != "" {
		w("#SBATCH --time=%s\n", j.Time)
	}
	w("#SBATCH --output=%s\n", j.LogPath)
	w("#SBATCH --chdir=%s\n", j.OutputDir)
	w("\nset -eu\n\n")

	w("# Rendezvous: the first host of the allocation is the master; each node's rank is its SLURM_NODEID,\n")
	w("# set in the per-node task below. torchrun reads the PET_ forms.\n")
	for _, v := range rendezvousEnv(j) {
		if v.Name == core.EnvNodeRank {
			continue // per node, in nodeScript
		}
		w("%s=%s\n", v.Name, v.Value)
		w("export %s PET_%s=\"$%s\"\n", v.Name, v.Name, v.Name)
	}
	envKeys := make([]string, 0, len(j.Env))
	for k := range j.Env {
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	if len(envKeys) > 0 {
		w("\n# The run's environment.\n")
		for _, k := range envKeys {
			w("export %s=%s\n", k, quote(j.Env[k]))
		}
	}
	if len(j.PassEnv) > 0 {
		w("\n# Forwarded by name from the environment sbatch ran in; their values are not in this file.\n")
		for _, k := range j.PassEnv {
			w(": \"${%s:?set %s in the environment you run sbatch in}\"\n", k, k)
			w("export %s\n", k)
		}
	}
	w("\necho \"rival: job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $MASTER_ADDR:$MASTER_PORT\"\n")

	if j.NodeHardware {
		nodes := filepath.Join(j.OutputDir, "nodes")
		w("\n# Each node's hardware, for the result's provenance (best effort).\n")
		w("read -r -d '' RIVAL_NODE_HW <<'HW' || true\n%sHW\n", nodeHardware())
		w("mkdir -p %s\n", quote(nodes))
		w("srun --ntasks-per-node=1 bash -c \"$RIVAL_NODE_HW\" rival-node-hw %s ||\n", quote(nodes))
		w("  echo \"rival: could not record every node's hardware\" >&2\n")
	}

	w("\n# The per-node task: this node's rank, the placeholders filled in, then the launch.\n")
	rank := ""
	for _, v := range rendezvousEnv(j) {
		if v.Name == core.EnvNodeRank {
			// Two commands: export expands all its words before it assigns any.
			rank = fmt.Sprintf("export %s=%s\nexport PET_%s=\"$%s\"\n", v.Name, v.Value, v.Name, v.Name)
		}
	}
	node := rank + nodeScript + nodeExec
	if j.Container == ContainerDocker {
		node = rank + nodeScript + nodeImageID(j) + nodeDocker
	}
	node = nodePower(j) + node
	w("read -r -d '' RIVAL_NODE <<'NODE' || true\n%sNODE\n\n", node)

	// One task per node, given all of the node's CPUs; a failing node ends the others.
	srun := []string{"srun", "--ntasks-per-node=1", "--cpus-per-task=\"$SLURM_CPUS_ON_NODE\"", "--kill-on-bad-exit=1"}
	var argv []string
	switch j.Container {
	case ContainerPyxis:
		srun = append(srun, "--container-image="+quote(j.Image))
		if len(j.Mounts) > 0 {
			ms := make([]string, len(j.Mounts))
			for i, m := range j.Mounts {
				ms[i] = m.Host + ":" + m.Container
				if m.ReadOnly {
					ms[i] += ":ro"
				}
			}
			srun = append(srun, "--container-mounts="+quote(strings.Join(ms, ",")))
		}
		if j.WorkDir != "" {
			srun = append(srun, "--container-workdir="+quote(j.WorkDir))
		}
	case ContainerDocker:
		argv = []string{"--network=host", "--ipc=host"}
		var names []string
		for _, v := range rendezvousEnv(j) {
			names = append(names, v.Name, "PET_"+v.Name)
		}
		for _, k := range append(append(names, envKeys...), j.PassEnv...) {
			argv = append(argv, "-e", k)
		}
		for _, m := range j.Mounts {
			v := m.Host + ":" + m.Container
			if m.ReadOnly {
				v += ":ro"
			}
			argv = append(argv, "-v", v)
		}
		if j.WorkDir != "" {
			argv = append(argv, "-w", j.WorkDir)
		}
		argv = append(argv, j.DockerRunArgs...)
		argv = append(argv, j.Image)
	case ContainerNone:
		if j.WorkDir != "" {
			w("cd %s\n", quote(j.WorkDir))
		}
	}
	if len(j.Preflight) > 0 {
		w("# The preflight: the framework's own validation of this launch, once, on the first node; a\n")
		w("# failure ends the job here, before torchrun.\n")
		w("srun --nodes=1 --ntasks=1 \\\n")
		for _, opt := range srun[4:] {
			w("  %s \\\n", opt)
		}
		w("  bash -c \"$RIVAL_NODE\" rival-preflight \\\n")
		w("%s\n\n", argLines(append(append([]string(nil), argv...), j.Preflight...), "    "))
	}
	argv = append(argv, j.Command...)
	w("%s \\\n", strings.Join(srun[:4], " "))
	for _, opt := range srun[4:] {
		w("  %s \\\n", opt)
	}
	w("  bash -c \"$RIVAL_NODE\" rival-node \\\n")
	w("%s\n", argLines(argv, "    "))
	return b.String(), nil
}

// argLines quotes argv for the shell, one flag (with its value) per continuation line.
func argLines(argv []string, indent string) string {
	var lines []string
	for i := 0; i < len(argv); i++ {
		line := quote(argv[i])
		if strings.HasPrefix(argv[i], "-") && !strings.Contains(argv[i], "=") && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			line += " " + quote(argv[i+1])
			i++
		}
		lines = append(lines, indent+line)
	}
	return strings.Join(lines, " \\\n")
}

// safeWord are characters a POSIX shell takes literally in an unquoted word.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./=:,+@%-]+$`)

// quote returns s as one shell word: bare when that is unambiguous, else single-quoted.
func quote(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

// rendezvousEnv is the job's rendezvous variables as the script sets them (core.NodeEnv's names and
// meaning): the rank per node, the master the allocation's first host. A CPU job (GPUsPerNode 0) has
// no GPUS_PER_NODE.
func rendezvousEnv(j Job) []core.Var {
	all := core.NodeEnv(core.Node{
		NNodes: strconv.Itoa(j.NNodes), GPUsPerNode: strconv.Itoa(j.GPUsPerNode), Rank: `"$SLURM_NODEID"`,
		MasterAddr: `$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)`, MasterPort: strconv.Itoa(j.MasterPort),
	})
	out := all[:0]
	for _, v := range all {
		if v.Name == core.EnvGPUsPerNode && j.GPUsPerNode == 0 {
			continue
		}
		out = append(out, v)
	}
	return out
}

// nodePower is the per-node block that samples the node's GPUs' board power in the background
// while the per-node task runs. It writes OutputDir/nodes/<node>/power.log as blocks: a line
// "@ <epoch seconds>" (the node's clock, read just before the query) followed by the smi tool's
// output, in the format hw.ParsePowerSample reads. It samples only the GPUs the step was given
// (CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES, else SLURM_STEP_GPUS, else SLURM_JOB_GPUS) and
// stops once the task's process ($$, which the launch replaces by exec) is gone. A node without
// the tool, or whose output folder cannot be made, records nothing and the launch runs as usual.
func nodePower(j Job) string {
	tool, args := hw.PowerQuery(j.PowerPlatform)
	if tool == "" {
		return ""
	}
	ids, sel := `${CUDA_VISIBLE_DEVICES:-${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}}`, `sel=(-i "$ids")`
	if j.PowerPlatform == hw.PlatformAMD {
		ids = `${ROCR_VISIBLE_DEVICES:-${HIP_VISIBLE_DEVICES:-${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}}}`
		sel = `sel=(-g ${ids//,/ })`
	}
	return `# This node's GPU board power while the launch runs, in the background.
(
  d=` + quote(filepath.Join(nodeOutputDir(j), "nodes")) + `/"${SLURMD_NODENAME:-$(hostname)}"
  command -v ` + tool + ` >/dev/null 2>&1 && mkdir -p "$d" || exit 0
  ids=` + ids + `
  sel=()
  if [ -n "$ids" ]; then ` + sel + `; fi
  while kill -0 $$ 2>/dev/null; do
    t=$(date +%s.%N)
    if out=$(` + tool + ` ` + quoteAll(args) + ` ${sel[@]+"${sel[@]}"} 2>/dev/null); then
      printf '@ %s\n%s\n' "$t" "$out" >> "$d/` + PowerFile + `"
    fi
    sleep ` + strconv.Itoa(int(PowerInterval/time.Second)) + `
  done
) </dev/null >/dev/null 2>&1 &
`
}

// nodeOutputDir is OutputDir as the per-node task sees it: inside the container under pyxis
// (the per-node task runs there), where a mount shows it; the host path otherwise.
func nodeOutputDir(j Job) string {
	if j.Container != ContainerPyxis {
		return j.OutputDir
	}
	for _, m := range j.Mounts {
		if rel, err := filepath.Rel(m.Host, j.OutputDir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Join(m.Container, rel)
		}
	}
	return j.OutputDir
}
