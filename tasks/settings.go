package tasks

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/tasks/executor"
)

// settingSpec is one setting that changes how Rival runs: it is read from the environment only
// (config.env does not hold it) and enters no cache key as itself. The settings that change outputs
// are configKeys, in config.go; STACK is the one exception here: it chooses which pinned image a GPU
// run uses, and enters the keys as what it chooses (the image's name and digest, the launch), so a
// result says which stack it ran on whatever the word meant when it ran.
type settingSpec struct {
	name string
	def  string // the value when unset or empty; "" when unset means off or "not given"
	doc  string // one line for README's list
}

// The non-fingerprinted settings. README.md's list between the "settings" markers is generated
// from this table (go test ./tasks -run TestReadmeSettings -update-readme).
//
// Environment reads that stay outside it, and why:
//   - HF_ENDPOINT, HF_TOKEN: the Hugging Face convention, read by hub.OptionsFromEnv (hub imports
//     nothing of tasks); HF_ENDPOINT enters fetch keys, and HF_TOKEN is a credential, also taken
//     from secrets.env.
//   - RIVAL_CACHE: where the cache lives, read by cache.DefaultDir, which the cache's own tools use.
//   - PRICE_<GPU>: compare's prices enter its key as parameters (fingerprinted), parsed by
//     compare.ParsePriceEnv.
//   - config.env's keys overridden from the environment: read by LoadConfig through the same
//     source as these settings.
//   - extract's facts (GPUS, SL, MODEL, ...): they describe a log, not this workspace, and are
//     named by result.ExtractTraced.
//   - DOCKER_HOST, DOCKER_CONFIG: Docker's own variables, read as the docker CLI reads them.
//   - the whole environment handed to child processes (host trainers, sbatch, git, apt-get).
var settingSpecs = []settingSpec{
	{name: "RIVAL_CONFIG", doc: "the configuration file to load instead of `config.env`"},
	{name: "PLATFORM", doc: "the platform `shell` opens (`amd`, `nvd`, `cpu`) instead of the detected one"},
	{name: "STACK", def: core.StackCurrent, doc: "the software stack of GPU runs: `current` (" + stackDoc(core.StackCurrent) + ") or `previous` (" + stackDoc(core.StackPrevious) + "); it names the image, and every key, result and report label names the stack ([frameworks.md](docs/frameworks.md#pinned-versions))"},
	{name: "IMAGE_BASE", doc: "override the Dockerfile's FROM image: a mirror, or a local image (the cpu image has no default)"},
	{name: "CONTAINER", def: "0", doc: "`1`: run `cpu` training in the cpu image instead of on the host"},
	{name: "SLURM_IMAGE", doc: "the image Slurm nodes run: `repo@sha256:…` or an enroot squashfs path"},
	{name: "GPUS_PER_NODE", def: "8", doc: "GPUs per node where the host has none of the platform's (`train:slurm-script`, `train:check` on a login node)"},
	{name: "CLUSTER", def: "slurm", doc: "the cluster multi-node runs (NNODES > 1, or SLURM=1) go to: `slurm` or `k8s` (Kubernetes, see docs/kubernetes.md)"},
	{name: "KUBE_CONTEXT", doc: "the kubeconfig context Kubernetes runs use instead of the current one (KUBECONFIG or ~/.kube/config)"},
	{name: "KUBE_NAMESPACE", def: "default", doc: "the namespace of Kubernetes runs"},
	{name: "KUBE_SERVICE_ACCOUNT", doc: "the service account of Kubernetes runs' pods"},
	{name: "KUBE_NODE_SELECTOR", doc: "Kubernetes runs' node selector, `KEY=VALUE,...`"},
	{name: "KUBE_TOLERATIONS", doc: "taints Kubernetes runs' pods tolerate, `KEY[=VALUE][:EFFECT],...`"},
	{name: "KUBE_PRIORITY_CLASS", doc: "the priority class of Kubernetes runs' pods"},
	{name: "KUBE_DATA_CLAIM", doc: "the PersistentVolumeClaim holding a copy of `DATA_DIR` (datasets, tokenizers) for Kubernetes runs"},
	{name: "KUBE_CACHE_CLAIM", doc: "the claim holding `DATA_DIR/megatron-cache` for Kubernetes runs; empty: `KUBE_DATA_CLAIM`"},
	{name: "KUBE_OUTPUT_CLAIM", doc: "the PersistentVolumeClaim holding `OUTPUT_DIR` for Kubernetes runs (each run writes its folder there)"},
	{name: "KUBE_IMAGE", doc: "the image Kubernetes runs use, `repo@sha256:…`, instead of the one `image:push` delivered"},
	{name: "KUBE_PENDING_TIMEOUT", def: "2h", doc: "a Kubernetes run whose pods have not all started after this long is deleted, with the scheduler's reason"},
	{name: "EOD", doc: "the end-of-document token id `encode:file` appends when given a tokenizer.json path (not a model name)"},
	{name: "RIVAL_CACHE_MAX", def: "50GiB", doc: "`cache:trim` keeps what the cache takes on disk under this size"},
	{name: "RIVAL_CACHE_MAX_AGE", def: "30d", doc: "`cache:trim` drops entries unused for this long"},
	{name: "RIVAL_CACHE_LINK", doc: "`copy` stores and restores dataset files as full copies instead of sharing their bytes with the cache (a clone, else a read-only hard link; [cache.md](docs/cache.md#what-the-cache-takes-on-disk-and-what-trim-removes))"},
	{name: "RIVAL_STOP_GRACE", def: "2m0s", doc: "after the first Ctrl-C or SIGTERM, how long running tasks get to stop their trainers and containers"},
	{name: "RIVAL_POWER_INTERVAL", def: "5s", doc: "how often GPU power and memory are sampled while a run trains on this host (recorded as the result's `power_metrics.interval_seconds`)"},
	{name: "RIVAL_NO_INSTALL", def: "0", doc: "`1`: `demo` never installs PyTorch with apt-get; it says what to run instead"},
	{name: "EXTRACT_VERBOSE", doc: "any value: `extract` explains what it read, as with `-v`"},
	{name: "RIVAL_STORE", doc: "`oci://HOST[:PORT]/REPOSITORY`: a registry shared by the team's hosts as a second cache and the store of every result (docs/store.md); credentials from `docker login`"},
	{name: "RIVAL_STORE_INSECURE", def: "0", doc: "`1`: allow plain HTTP and unverified certificates for a `RIVAL_STORE` that is not on a loopback address"},
	{name: "RIVAL_STORE_CA", doc: "a PEM file of the certificate authority that signed `RIVAL_STORE`'s certificate, trusted beside the system's"},
	{name: "RIVAL_STORE_TIMEOUT", def: "5s", doc: "how long `RIVAL_STORE` may take to connect or answer before the run goes on with the local cache alone"},
}

// environment reads the non-fingerprinted settings from one source: the process environment in the
// product (ProcessEnvironment), a map over it in tests (With). The zero value reads the environment.
type environment struct {
	lookup func(string) (string, bool)
}

// processEnvironment reads the settings from the process environment.
func processEnvironment() environment { return environment{lookup: os.LookupEnv} }

// with returns settings where values override this source: the door tests use instead of the
// process environment. An empty value stands for an unset variable.
func (s environment) with(values map[string]string) environment {
	under := s.Lookup
	return environment{lookup: func(name string) (string, bool) {
		if v, ok := values[name]; ok {
			return v, true
		}
		return under(name)
	}}
}

// Lookup reads one variable of this source; config.env's environment overrides come through it.
func (s environment) Lookup(name string) (string, bool) {
	if s.lookup == nil {
		return os.LookupEnv(name)
	}
	return s.lookup(name)
}

// raw is a setting's value as given, "" when unset.
func (s environment) raw(name string) string {
	v, _ := s.Lookup(name)
	return v
}

// value is a setting's value, its default when unset or empty.
func (s environment) value(name string) string {
	if v := s.raw(name); v != "" {
		return v
	}
	for _, sp := range settingSpecs {
		if sp.name == name {
			return sp.def
		}
	}
	return ""
}

// configPath is RIVAL_CONFIG: the configuration file to load, "" for the workspace's config.env.
func (s environment) configPath() string { return s.raw("RIVAL_CONFIG") }

// platform is PLATFORM, "" when not given.
func (s environment) platform() string { return s.raw("PLATFORM") }

// imageBase is IMAGE_BASE, "" when not given (each Dockerfile's own FROM).
func (s environment) imageBase() string { return s.raw("IMAGE_BASE") }

// stack is STACK, checked: the stack GPU runs use (core.StackNames).
func (s environment) stack() (string, error) {
	v := s.value("STACK")
	if err := core.CheckStack(v); err != nil {
		return "", fmt.Errorf("%w: set STACK to one of them, or unset it for the current stack", err)
	}
	return v, nil
}

// stackDoc names a stack's images for the settings list.
func stackDoc(stack string) string {
	var out []string
	for _, p := range core.Pins {
		if p.Stack == stack {
			out = append(out, "`"+p.Name()+"`")
		}
	}
	return strings.Join(out, ", ")
}

// container reports CONTAINER=1.
func (s environment) container() bool { return s.raw("CONTAINER") == "1" }

// slurmImage is SLURM_IMAGE, "" when not given.
func (s environment) slurmImage() string { return s.raw("SLURM_IMAGE") }

// gpUsPerNode is GPUS_PER_NODE read as a leading integer, 8 when unset or unreadable.
func (s environment) gpUsPerNode() int {
	n := 8
	if v := s.raw("GPUS_PER_NODE"); v != "" {
		fmt.Sscan(v, &n)
	}
	return n
}

// cluster is CLUSTER: "slurm" (the default) or "k8s".
func (s environment) cluster() string { return s.value("CLUSTER") }

// kube is a KUBE_ setting by its name without the prefix ("NAMESPACE"), its default when unset.
func (s environment) kube(name string) string {
	switch name {
	case "CONTEXT":
		return s.value("KUBE_CONTEXT")
	case "NAMESPACE":
		return s.value("KUBE_NAMESPACE")
	case "SERVICE_ACCOUNT":
		return s.value("KUBE_SERVICE_ACCOUNT")
	case "NODE_SELECTOR":
		return s.value("KUBE_NODE_SELECTOR")
	case "TOLERATIONS":
		return s.value("KUBE_TOLERATIONS")
	case "PRIORITY_CLASS":
		return s.value("KUBE_PRIORITY_CLASS")
	case "DATA_CLAIM":
		return s.value("KUBE_DATA_CLAIM")
	case "CACHE_CLAIM":
		return s.value("KUBE_CACHE_CLAIM")
	case "OUTPUT_CLAIM":
		return s.value("KUBE_OUTPUT_CLAIM")
	case "IMAGE":
		return s.value("KUBE_IMAGE")
	case "PENDING_TIMEOUT":
		return s.value("KUBE_PENDING_TIMEOUT")
	}
	return ""
}

// eod is EOD as given, "" when not given; encode:file checks it is a token id.
func (s environment) eod() string { return s.raw("EOD") }

// cacheMax is RIVAL_CACHE_MAX, unparsed (ParseSize).
func (s environment) cacheMax() string { return s.value("RIVAL_CACHE_MAX") }

// cacheMaxAge is RIVAL_CACHE_MAX_AGE, unparsed (ParseAge).
func (s environment) cacheMaxAge() string { return s.value("RIVAL_CACHE_MAX_AGE") }

// cacheLink is RIVAL_CACHE_LINK: "copy", or "" to share dataset files with
// the cache (the cache reads the variable itself; this checks its value).
func (s environment) cacheLink() string { return s.raw("RIVAL_CACHE_LINK") }

// stopGrace is RIVAL_STOP_GRACE; a value that is not a positive duration gives the default.
func (s environment) stopGrace() time.Duration {
	if d, err := time.ParseDuration(s.raw("RIVAL_STOP_GRACE")); err == nil && d > 0 {
		return d
	}
	return executor.StopGrace
}

// powerInterval is RIVAL_POWER_INTERVAL: a positive duration, or an error naming the variable.
func (s environment) powerInterval() (time.Duration, error) {
	v := s.value("RIVAL_POWER_INTERVAL")
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("RIVAL_POWER_INTERVAL=%q: give how often to sample GPU power as a positive duration, such as 5s or 500ms", v)
	}
	return d, nil
}

// noInstall reports RIVAL_NO_INSTALL=1.
func (s environment) noInstall() bool { return s.raw("RIVAL_NO_INSTALL") == "1" }

// extractVerbose reports EXTRACT_VERBOSE set to anything.
func (s environment) extractVerbose() bool { return s.raw("EXTRACT_VERBOSE") != "" }

// store is RIVAL_STORE, "" when not given.
func (s environment) store() string { return s.raw("RIVAL_STORE") }

// storeInsecure reports RIVAL_STORE_INSECURE=1.
func (s environment) storeInsecure() bool { return s.raw("RIVAL_STORE_INSECURE") == "1" }

// storeCA is RIVAL_STORE_CA, "" when not given.
func (s environment) storeCA() string { return s.raw("RIVAL_STORE_CA") }

// storeTimeout is RIVAL_STORE_TIMEOUT; a value that is not a positive duration gives the default.
func (s environment) storeTimeout() time.Duration {
	if d, err := time.ParseDuration(s.value("RIVAL_STORE_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 5 * time.Second
}

// settingsMarkdown is README's list of the settings, one bullet each.
func settingsMarkdown() string {
	var b strings.Builder
	for _, sp := range settingSpecs {
		fmt.Fprintf(&b, "- `%s`", sp.name)
		if sp.def != "" {
			fmt.Fprintf(&b, " (default `%s`)", sp.def)
		}
		fmt.Fprintf(&b, ": %s\n", sp.doc)
	}
	return b.String()
}
