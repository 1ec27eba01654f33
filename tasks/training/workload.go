package training

import (
	"fmt"
	"io"
	"path"
	"sync"
	"time"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
)

// Run is one training run and what it trains on, as the workspace planned it.
type Run struct {
	Platform, Framework, Model string
	RunIndex                   int // 0-based repetition
	// Variant tells apart configurations of one platform, framework and
	// model trained side by side (the demo's "dp1" and "dp2"); it joins the
	// run's name and task id. Empty for ordinary runs.
	Variant string
	// Stack is STACK on amd and nvd (core.StackNames; "" is current), empty on cpu. A stack other
	// than the current one joins the run's name and task id, so the runs of two stacks never share
	// a result file.
	Stack string
	// ImageBase is IMAGE_BASE when it replaces the stack's pinned image (a GPU run); the run then
	// names its stack by that image, so it is never taken for a run of the pinned one.
	ImageBase   string
	Dataset     string
	TrainPrefix string // the encoded train split, without .bin/.idx
	Tokenizer   data.TokenizerSpec
	Encode      *dag.Task // the task producing TrainPrefix; nil when it is on disk already
	Host        hw.Host
	// Executor runs the launch: on the host for cpu, in a container or a cluster otherwise.
	Executor executor.Executor
	Workload Workload
}

// Workload is the configuration a run trains in.
type Workload struct {
	Fair   core.Fair
	NNodes int
	// Values are the configuration's training keys (config.env's names), which enter the run's
	// key and its result's provenance; Fingerprint is the configuration fingerprint over them.
	Values      map[string]string
	Fingerprint string
	Timeout     string // TRAIN_TIMEOUT as configured; "" or "0" for none
	Force       bool   // FORCE: train again even when the key is cached
	// CPUPrecision is the precision a CPU run trains in and why; empty on GPUs.
	CPUPrecision CPUPrecision
}

// CPUPrecision is the precision a CPU run trains in and why.
type CPUPrecision struct {
	Precision string // "fp32" or "bf16"
	Reason    string // for the log line, e.g. "the CPU has no native bf16 (no avx512_bf16 or amx_bf16 flag)"
	Changed   bool   // Precision differs from what the configuration asked
}

// Site is where a workspace's runs write and what they share.
type Site struct {
	Root      string // the workspace root, written as a placeholder in keys
	OutputDir string // OUTPUT_DIR, absolute: results, logs and run folders
	DataDir   string // DATA_DIR, absolute: Megatron's data caches
	// CPUInfo is where the kernel lists the CPU (/proc/cpuinfo), read for a CPU run's result.
	CPUInfo string
	// PowerInterval is how often GPU power and memory are sampled during a run on one host.
	PowerInterval time.Duration
	RivalVersion  string // recorded in every result
	// Notes are shared by a workspace's runs, so each note is told once; nil tells it every run.
	Notes *Notes
}

// Notes are what a workspace tells once per invocation rather than once per run.
type Notes struct{ said sync.Map }

// once writes text to w the first time key is told.
func (n *Notes) once(w io.Writer, key any, text string) {
	if n == nil {
		fmt.Fprintln(w, text)
		return
	}
	if _, dup := n.said.LoadOrStore(key, true); !dup {
		fmt.Fprintln(w, text)
	}
}

// Name is the file-name stem of a run: train_<platform>_<framework>_<model>_<dataset>[_runN]
// (the original suite's naming, with the repetition when RUNS > 1).
func Name(platform, framework, model, dataset string, run int) string {
	n := fmt.Sprintf("train_%s_%s_%s_%s", platform, framework, model, dataset)
	if run > 0 {
		n += fmt.Sprintf("_run%d", run+1)
	}
	return n
}

// RunName is Name with the variant and a stack other than the current one before the repetition
// (train_cpu_fsdp_mistral-proxy_sample_dp2_run3, train_nvd_mega_llama_bc_previous): every target
// that names a run's folder takes it from here, so two stacks never share one.
func (in Run) RunName() string {
	ds := in.Dataset
	for _, v := range []string{in.Variant, in.otherStack()} {
		if v != "" {
			ds += "_" + v
		}
	}
	return Name(in.Platform, in.Framework, in.Model, ds, in.RunIndex)
}

// stackName is how the run's key and result name its stack: the pinned image's name the launch
// carries, or the IMAGE_BASE image with the pin its launch was built for; "" on cpu.
func (in Run) stackName(l core.Launch) string {
	if l.Stack == "" || in.ImageBase == "" {
		return l.Stack
	}
	return path.Base(in.ImageBase) + " (IMAGE_BASE; launch built for " + l.Stack + ")"
}

// otherStack is the run's stack when it is not the current one, else "".
func (in Run) otherStack() string {
	if in.Stack == core.StackCurrent {
		return ""
	}
	return in.Stack
}

// runSuffix is the repetition part of a task id: " run2" for the second.
func runSuffix(run int) string {
	if run == 0 {
		return ""
	}
	return fmt.Sprintf(" run%d", run+1)
}

// gpus is the number of processes a run uses for the TP×PP×DP check:
// GPUs per node times NNODES; on the cpu platform, the data-parallel
// processes DP asks for.
func (in Run) gpus() int {
	if in.Platform == hw.PlatformCPU {
		return in.Workload.cpuProcs() * in.Workload.NNodes
	}
	return len(in.Host.GPUs) * in.Workload.NNodes
}

// cpuProcs is the processes per node of a CPU run: TP×PP×DP over NNODES.
func (w Workload) cpuProcs() int {
	return max(1, w.Fair.TP*w.Fair.PP*w.Fair.DP/max(1, w.NNodes))
}

// checkParallelism verifies that TP×PP×DP covers exactly the GPUs of a run.
func checkParallelism(f core.Fair, gpus int) error {
	if gpus <= 0 {
		return nil
	}
	if f.TP*f.PP*f.DP != gpus {
		return fmt.Errorf("config TP×PP×DP = %d×%d×%d = %d, but the run has %s; set DP=%d (or adjust TP, PP)",
			f.TP, f.PP, f.DP, f.TP*f.PP*f.DP, english.Plural(gpus, "GPU"), max(1, gpus/(f.TP*f.PP)))
	}
	return nil
}
