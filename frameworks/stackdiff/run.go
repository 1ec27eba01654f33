package stackdiff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Trees names one side of a comparison: the framework's checkout, and for Megatron-Bridge the
// Megatron-LM checkout it runs on (its 3rdparty/Megatron-LM when that is filled in).
type Trees struct {
	Root     string
	Megatron string // Bridge only
}

// ParseTrees reads a command-line side: "TREE", or for Megatron-Bridge "BRIDGE_TREE,MEGATRON_TREE"
// (the Megatron tree defaults to BRIDGE_TREE/3rdparty/Megatron-LM).
func ParseTrees(framework, arg string) (Trees, error) {
	root, meg, _ := strings.Cut(arg, ",")
	t := Trees{Root: absPath(root), Megatron: absPath(meg)}
	if framework == Bridge && t.Megatron == "" {
		t.Megatron = filepath.Join(t.Root, "3rdparty", "Megatron-LM")
	}
	for _, d := range []string{t.Root, t.Megatron} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return t, fmt.Errorf("stack diff: %s is not a folder: name an upstream checkout (for nemo: BRIDGE_TREE,MEGATRON_TREE)", d)
		}
	}
	return t, nil
}

func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Options configure Run.
type Options struct {
	// Repo is the repository's root, where the extractors are (frameworks/facts, frameworks/nemo/bridgecheck).
	Repo string
	// Python runs the extractors (standard library and PyYAML; Megatron Core 0.18 and later need
	// Python 3.12). Empty: python3.
	Python string
	// Build makes a launch as a run makes it: the registry's frameworks.Build.
	Build BuildFunc
}

// BuildFunc makes one launch.
type BuildFunc func(core.Request) (core.Launch, error)

// Run extracts the facts of both trees of framework and compares them.
func Run(ctx context.Context, framework string, old, cur Trees, opt Options) (*Report, error) {
	if !slices.Contains(Frameworks, framework) {
		return nil, fmt.Errorf("stack diff: no framework %q: one of %s", framework, strings.Join(Frameworks, ", "))
	}
	fo, err := Extract(ctx, framework, old, opt)
	if err != nil {
		return nil, err
	}
	fn, err := Extract(ctx, framework, cur, opt)
	if err != nil {
		return nil, err
	}
	ot, err := ReadTree(old.Root, old.Megatron)
	if err != nil {
		return nil, err
	}
	nt, err := ReadTree(cur.Root, cur.Megatron)
	if err != nil {
		return nil, err
	}
	used, err := UsedNames(framework, opt.Build)
	if err != nil {
		return nil, err
	}
	return DiffFacts(framework, fo, fn, ot, nt, used)
}

// DiffFacts compares two trees' facts (as the extractors write them), locating each change in the
// trees, and adds the watched files that changed.
func DiffFacts(framework string, oldFacts, newFacts []byte, oldTree, newTree *Tree, used map[string]bool) (*Report, error) {
	oi, on, err := items(framework, oldFacts)
	if err != nil {
		return nil, err
	}
	ni, nn, err := items(framework, newFacts)
	if err != nil {
		return nil, err
	}
	// A class that is gone is one change, not one per field it had.
	kept := map[string]bool{}
	for _, it := range ni {
		if it.area == "classes" {
			kept[it.name] = true
		}
	}
	oi = slices.DeleteFunc(oi, func(it item) bool {
		c, ok := strings.CutPrefix(it.area, "class ")
		return ok && !kept[c]
	})
	rep := diffItems(framework, on, nn, oi, ni, oldTree, newTree, used)
	rep.Changes = append(rep.Changes, fileChanges(framework, oldTree, newTree)...)
	return rep, nil
}

// Extract runs framework's extractor on one tree and returns its facts.
func Extract(ctx context.Context, framework string, t Trees, opt Options) ([]byte, error) {
	py := opt.Python
	if py == "" {
		py = "python3"
	}
	label := treeLabel(t.Root)
	var args []string
	env := os.Environ()
	switch framework {
	case Megatron:
		args = []string{filepath.Join(opt.Repo, "frameworks", "facts", "extract_megatron.py"), t.Root, label}
	case Primus:
		args = []string{filepath.Join(opt.Repo, "frameworks", "facts", "extract_primus.py"), t.Root, label, label}
	case TorchTitan:
		args = []string{filepath.Join(opt.Repo, "frameworks", "facts", "torchtitan_extract.py"), t.Root, label, label}
	case Bridge:
		args = []string{filepath.Join(opt.Repo, "frameworks", "nemo", "bridgecheck", "extract.py"), t.Root, t.Megatron}
		env = append(env, "RIVAL_BRIDGE_COMMIT="+label, "RIVAL_MEGATRON_COMMIT="+treeLabel(t.Megatron))
	}
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("stack diff: %s %s on %s: %v: %s (the extractors need Python with PyYAML; Megatron Core 0.18 and later need Python 3.12: set RIVAL_PYTHON)",
			py, filepath.Base(args[0]), t.Root, err, lastLines(errb.String(), 3))
	}
	return out.Bytes(), nil
}

// treeLabel names a tree in the report: its git commit when it is a checkout, else its folder's
// name after the first "-" (a snapshot's "primus-v26.5.1" is "v26.5.1").
func treeLabel(root string) string {
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
			if c := strings.TrimSpace(string(out)); len(c) == 40 {
				return c
			}
		}
	}
	base := filepath.Base(root)
	if _, rest, ok := strings.Cut(base, "-"); ok && rest != "" {
		return rest
	}
	return base
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}

// fair is a full-size run's configuration: 8 GPUs, bf16, SL 4096 (past Mistral's window).
var fair = core.Fair{Seed: 1234, MBS: 1, SL: 4096, GA: 8, GBS: 64, TP: 1, PP: 1, DP: 8, TrainIters: 100, WarmupSteps: 10,
	LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: core.BF16,
	ProfileStepStart: 10, ProfileStepEnd: 12, ProfileRanks: []int{0}}

// UsedNames are the names Rival's launches of framework set or read, keyed as diffItems keys them:
// every launch of every model on every platform the framework runs on, on every stack (a move is read
// from the stack Rival leaves as much as from the one it goes to).
func UsedNames(framework string, build BuildFunc) (map[string]bool, error) {
	if build == nil {
		return nil, fmt.Errorf("stack diff: no launch builder (pass frameworks.Build)")
	}
	used := map[string]bool{}
	fw := map[string]string{Megatron: core.Mega, Primus: core.Prim, Bridge: core.Nemo, TorchTitan: core.Titan}[framework]
	for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
		for _, m := range models.Names() {
			for _, stack := range core.StackNames {
				req := core.Request{Platform: platform, Framework: fw, Stack: stack, Model: m, GPUs: 8,
					Host: hw.Host{Platform: platform, GPUs: make([]hw.GPU, 8)}, Fair: fair,
					DataPrefix: "/rival/data/corpus", DataCacheDir: "/rival/data/cache", TokenizerPath: "/rival/tokenizer", OutputDir: "/rival/out"}
				l, err := build(req)
				if err != nil {
					continue // a framework that does not run there, a model it refuses
				}
				if l.Framework != fw {
					continue // remapped to another framework
				}
				if err := addUsed(framework, l, used); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(used) == 0 {
		return nil, fmt.Errorf("stack diff: no launch of %s could be built", fw)
	}
	return used, nil
}

func addUsed(framework string, l core.Launch, used map[string]bool) error {
	switch framework {
	case Megatron:
		argv := l.Command
		if l.Preflight != nil {
			argv = append(slices.Clone(argv), l.Preflight.Command...)
		}
		for _, a := range argv {
			if strings.HasPrefix(a, "--") {
				used["arguments|"+a] = true
			}
		}
	case Primus:
		for n, b := range l.Files {
			if !strings.HasSuffix(n, ".yaml") {
				continue
			}
			var doc map[string]any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				return fmt.Errorf("stack diff: prim's %s: %w", n, err)
			}
			walkYAML(doc, used)
		}
	case TorchTitan:
		for n, b := range l.Files {
			if !strings.HasSuffix(n, ".toml") {
				continue
			}
			// Rival writes its job files flat: [section] headers and key = value lines.
			section := ""
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimSpace(line)
				switch {
				case strings.HasPrefix(line, "["):
					section = strings.Trim(line, "[]")
				case section != "" && strings.Contains(line, "=") && !strings.HasPrefix(line, "#"):
					k, _, _ := strings.Cut(line, "=")
					used["["+section+"]|"+strings.TrimSpace(k)] = true
				}
			}
		}
	case Bridge:
		b, ok := l.Files["rival_nemo.json"]
		if !ok {
			return fmt.Errorf("stack diff: nemo's launch has no rival_nemo.json")
		}
		var doc map[string]map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("stack diff: nemo's rival_nemo.json: %w", err)
		}
		for s, kv := range doc {
			for k := range kv {
				used["section "+s+"|"+k] = true
			}
		}
		// The provider classes the entry script builds the model section with.
		script := string(l.Files["rival_nemo.py"])
		for _, c := range []string{"GPTModelProvider", "LlamaModelProvider", "Llama31ModelProvider", "Qwen2ModelProvider", "MistralModelProvider", "ConfigContainer"} {
			if strings.Contains(script, c) {
				used["classes|"+c] = true
			}
		}
	}
	return nil
}

// walkYAML marks every key of a Primus experiment file, at any depth, as used in any area.
func walkYAML(v any, used map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			used["|"+k] = true
			walkYAML(y, used)
		}
	case []any:
		for _, y := range x {
			walkYAML(y, used)
		}
	}
}

// watched are the upstream files whose code (not configuration) decides what Rival's launches of a
// framework compute or read: a change there is listed for a person to read.
var watched = map[string][]string{
	Megatron: {"megatron/core/models/gpt/gpt_model.py", "megatron/core/models/gpt/gpt_layer_specs.py",
		"megatron/core/optimizer_param_scheduler.py", "megatron/core/optimizer/__init__.py",
		"megatron/core/datasets/gpt_dataset.py", "megatron/core/transformer/transformer_config.py"},
	Primus: {"examples/run_pretrain.sh", "examples/megatron/prepare.py", "primus/core/launcher/parser.py",
		"primus/modules/trainer/megatron/pre_trainer.py", "primus/modules/trainer/megatron/trainer.py"},
	TorchTitan: {"torchtitan/train.py", "torchtitan/components/loss.py", "torchtitan/components/lr_scheduler.py",
		"torchtitan/components/optimizer.py", "torchtitan/components/validate.py", "torchtitan/models/attention.py",
		"torchtitan/models/llama3/model/model.py", "torchtitan/models/llama3/model/state_dict_adapter.py"},
	Bridge: {"src/megatron/bridge/training/config.py", "src/megatron/bridge/training/optim.py",
		"src/megatron/bridge/training/losses.py", "src/megatron/bridge/training/gpt_step.py",
		"src/megatron/bridge/models/gpt_provider.py"},
}

// fileChanges lists the watched files that differ: lines added and removed, the first changed line.
func fileChanges(framework string, old, cur *Tree) []Change {
	var out []Change
	for _, rel := range watched[framework] {
		a, b := old.lines(rel), cur.lines(rel)
		switch {
		case a == nil && b == nil:
			continue
		case a == nil:
			out = append(out, Change{Kind: File, Area: "file", Name: rel, New: fmt.Sprintf("%d lines", len(b)), Note: "new file", Touches: true})
		case b == nil:
			out = append(out, Change{Kind: File, Area: "file", Name: rel, Old: fmt.Sprintf("%d lines", len(a)), Note: "gone", Touches: true})
		default:
			added, removed := lineDelta(a, b)
			if added == 0 && removed == 0 {
				continue
			}
			first := 0
			for first < min(len(a), len(b)) && a[first] == b[first] {
				first++
			}
			out = append(out, Change{Kind: File, Area: "file", Name: rel, Old: fmt.Sprintf("%d lines", len(a)), New: fmt.Sprintf("%d lines", len(b)),
				Where: fmt.Sprintf("%s:%d", rel, first+1), Note: fmt.Sprintf("%d lines added, %d removed", added, removed), Touches: true})
		}
	}
	return out
}

// lineDelta counts the lines of b that a lacks and of a that b lacks, as multisets.
func lineDelta(a, b []string) (added, removed int) {
	n := map[string]int{}
	for _, l := range a {
		n[l]++
	}
	for _, l := range b {
		n[l]--
	}
	for _, c := range n {
		if c < 0 {
			added -= c
		} else {
			removed += c
		}
	}
	return added, removed
}
