package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/titan"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/tokenizer"
)

// Family is one model family of the conformance: a proxy model and the tokenizer (a folder under
// tokenizer/testdata) that encodes the sample corpus for it.
type Family struct {
	Model, Tokenizer string
}

// Families are the three families the conformance covers.
var Families = []Family{{"llama-proxy", "mistral-7b-v0.1"}, {"qwen-proxy", "qwen-2.5"}, {"mistral-proxy", "mistral-7b-v0.1"}}

// Devices and data types a plan runs in.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
	FP32       = "fp32"
	BF16       = "bf16"
)

// Options say where and how a conformance runs.
type Options struct {
	// Build makes a launch as a run makes it: the registry's frameworks.Build.
	Build    func(core.Request) (core.Launch, error) `json:"-"`
	Dir      string                                  // the folder the plan is written to
	Root     string                                  // Dir as the runs see it (a container's mount point); empty: Dir
	Upstream string                                  // the pinned trees' folder as the runs see it (megatron-<8 hex>, primus-<tag>, ... in it)
	Repo     string                                  // the repository's root, which holds the sample corpus and the tokenizers
	Device   string                                  // cpu (default) or cuda
	DType    string                                  // fp32 (default) or bf16
	Python   string                                  // the Python with torch the runs use; empty: python3
	Threads  int                                     // torch's CPU threads per run; 0: 2
	Families []Family
	// Stacks are the stacks (core.StackNames) whose Megatron-LM, Bridge, Primus and TorchTitan launches
	// run against the one fsdp reference; empty: the current one. A run of a stack other than the
	// current one is named <model>/<stack>/<framework>.
	Stacks []string
	// TrainSteps, when positive, adds to each family a training run of fsdp and one of TorchTitan:
	// the single-GPU bf16 launch of the family's proxy (TrainRequest) for that many steps, on the
	// sample corpus, logged as in a real run.
	TrainSteps int
	// TrainSeqLen is the training runs' sequence length; 0: 2048.
	TrainSeqLen int
}

// Run kinds.
const (
	KindConform = "conform" // a conformance runner: per-step numbers on the checkpoint and batches
	KindTrain   = "train"   // a training run of a launch, logged as in a real run
)

// Run is one process of a plan: a conformance runner (Kind "conform") or a training run ("train").
// A run with a Reference carries one planted drift and must differ from it from FirstStep on.
type Run struct {
	Name      string            `json:"name"`
	Kind      string            `json:"kind"`
	Framework string            `json:"framework"`
	Model     string            `json:"model"`
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env,omitempty"`
	LogFamily string            `json:"log_family,omitempty"`
	Reference string            `json:"reference,omitempty"`
	FirstStep int               `json:"first_step,omitempty"`
}

// Pair is two runs of one family whose numbers must agree: A is the reference.
type Pair struct {
	Model string `json:"model"`
	A     string `json:"a"`
	B     string `json:"b"`
}

// Plan is a conformance written out: its files under Dir, and the runs run.sh starts.
type Plan struct {
	Options   `json:"-"`
	Device    string                 `json:"device"`
	DType     string                 `json:"dtype"`
	Tolerance Tolerance              `json:"tolerance"`
	Runs      []Run                  `json:"runs"`
	Pairs     []Pair                 `json:"pairs"`
	Launches  map[string]core.Launch `json:"-"` // by run name
}

// ScriptFile and PlanFile are the names Prepare writes in Dir; the runs' output goes to OutDir.
const (
	ScriptFile = "run.sh"
	PlanFile   = "plan.json"
	OutDir     = "out"
)

// ToleranceFor is the tolerance of a data type: DefaultTolerance in fp32, BF16Tolerance in bf16.
func ToleranceFor(dtype string) Tolerance {
	if dtype == BF16 {
		return BF16Tolerance
	}
	return DefaultTolerance
}

// Prepare writes the conformance of opt into opt.Dir: the runner, one checkpoint and the batches
// per family, every framework's launch files, and the plan (call WriteScript after adding runs).
func Prepare(ctx context.Context, opt Options) (*Plan, error) {
	if opt.Root == "" {
		opt.Root = opt.Dir
	}
	if opt.Device == "" {
		opt.Device = DeviceCPU
	}
	if opt.DType == "" {
		opt.DType = FP32
	}
	if opt.Python == "" {
		opt.Python = "python3"
	}
	if opt.Threads == 0 {
		opt.Threads = 2
	}
	if len(opt.Families) == 0 {
		opt.Families = Families
	}
	if len(opt.Stacks) == 0 {
		opt.Stacks = []string{core.StackCurrent}
	}
	for _, st := range opt.Stacks {
		if err := core.CheckStack(st); err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
	}
	if opt.Device != DeviceCPU && opt.Device != DeviceCUDA {
		return nil, fmt.Errorf("conformance: device %q: cpu or cuda", opt.Device)
	}
	if opt.DType != FP32 && opt.DType != BF16 {
		return nil, fmt.Errorf("conformance: data type %q: fp32 or bf16", opt.DType)
	}
	if opt.Build == nil {
		return nil, errors.New("conformance: no launch builder (pass frameworks.Build)")
	}
	if opt.Upstream == "" {
		return nil, errors.New("conformance: no folder of pinned trees: set RIVAL_UPSTREAM_DIR (docs/frameworks.md, numerical conformance)")
	}
	p := &Plan{Options: opt, Device: opt.Device, DType: opt.DType, Tolerance: ToleranceFor(opt.DType), Launches: map[string]core.Launch{}}
	if err := p.Write(ScriptName, Script()); err != nil {
		return nil, err
	}
	for _, fam := range opt.Families {
		if err := p.family(ctx, fam); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Write writes b to rel under Dir.
func (p *Plan) Write(rel string, b []byte) error {
	f := filepath.Join(p.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	return cache.WriteFileAtomic(f, b, 0o644)
}

// WriteLaunch writes a launch's files under rel, as the run's output folder holds them.
func (p *Plan) WriteLaunch(rel string, l core.Launch) error {
	for _, n := range slices.Sorted(maps.Keys(l.Files)) {
		if err := p.Write(path.Join(rel, n), l.Files[n]); err != nil {
			return err
		}
	}
	return nil
}

// In is rel as the runs see it.
func (p *Plan) In(rel string) string { return path.Join(p.Root, rel) }

// Tree is the pinned tree name (megatron-b0cc2706, primus-v26.2, ...) as the runs see it.
func (p *Plan) Tree(name string) string { return path.Join(p.Upstream, name) }

// Find returns the run named name, or nil.
func (p *Plan) Find(name string) *Run {
	for i := range p.Runs {
		if p.Runs[i].Name == name {
			return &p.Runs[i]
		}
	}
	return nil
}

func (p *Plan) conform(kind string, fam string, sl int, rest ...string) []string {
	return append([]string{p.Python, p.In(ScriptName), kind, p.In(path.Join(fam, "checkpoint")), p.In(path.Join(fam, "batches.i64")),
		fmt.Sprint(GBS), fmt.Sprint(Steps), fmt.Sprint(sl)}, rest...)
}

func (p *Plan) add(r Run, l core.Launch) {
	r.Kind = KindConform
	if r.Framework == "" {
		r.Framework = r.Name[strings.LastIndex(r.Name, "/")+1:]
	}
	p.Runs = append(p.Runs, r)
	p.Launches[r.Name] = l
}

// family writes one family's checkpoint, batches and launches and adds its runs.
func (p *Plan) family(ctx context.Context, fam Family) error {
	m, err := models.Lookup(fam.Model)
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	if err := WriteCheckpoint(filepath.Join(p.Dir, fam.Model, "checkpoint"), m, Seed); err != nil {
		return err
	}
	sl := SeqLenOf(m)
	samples, err := Batches(ctx, p.Repo, fam.Tokenizer, m.Vocab, sl, Steps*GBS, filepath.Join(p.Dir, fam.Model, "corpus"))
	if err != nil {
		return err
	}
	if err := WriteBatches(filepath.Join(p.Dir, fam.Model, "batches.i64"), sl, samples); err != nil {
		return err
	}
	name := func(fw string) string { return fam.Model + "/" + fw }

	fsdp, err := p.Build(Request(hw.PlatformCPU, core.FSDP, fam.Model))
	if err != nil {
		return err
	}
	if err := p.Write(path.Join(fam.Model, "fsdp", "train.py"), fsdp.Files["train.py"]); err != nil {
		return err
	}
	fsdpArgv := p.conform("fsdp", fam.Model, sl, append([]string{"--", p.In(path.Join(fam.Model, "fsdp", "train.py"))}, fsdp.Command[2:]...)...)
	p.add(Run{Name: name("fsdp"), Model: fam.Model, Argv: fsdpArgv}, fsdp)
	if m.SlidingWindow > 0 && slices.Contains(fsdp.Command, "--window") {
		// The CPU launch runs the window through SDPA with a mask; GPU launches take FlexAttention
		// (auto on CUDA), whose block mask must give the same numbers.
		p.add(Run{Name: name("fsdp-flex"), Framework: "fsdp", Model: fam.Model, Argv: append(slices.Clone(fsdpArgv), "--attention", "flex")}, fsdp)
		p.Pairs = append(p.Pairs, Pair{fam.Model, "fsdp", "fsdp-flex"})
	}

	for _, st := range p.Stacks {
		if err := p.stack(fam, st, sl); err != nil {
			return err
		}
	}
	if p.TrainSteps > 0 {
		nvd, err := core.PinFor(hw.PlatformNVIDIA, core.StackCurrent)
		if err != nil {
			return err
		}
		return p.training(ctx, fam, m, nvd)
	}
	return nil
}

// stack adds one stack's Megatron-LM, Megatron-Bridge, Primus and TorchTitan runs of a family, each
// paired with the family's fsdp run.
func (p *Plan) stack(fam Family, stack string, sl int) error {
	// rel is a framework's run within the family: "mega", or "previous/mega" on another stack; the
	// run's name and folder are the family's plus rel.
	rel := func(fw string) string { return fw }
	if stack != core.StackCurrent {
		rel = func(fw string) string { return stack + "/" + fw }
	}
	dir := func(fw string) string { return path.Join(fam.Model, rel(fw)) }
	name := dir
	req := func(platform, fw string) core.Request {
		r := Request(platform, fw, fam.Model)
		r.Stack = stack
		return r
	}
	nvd, err := core.PinFor(hw.PlatformNVIDIA, stack)
	if err != nil {
		return err
	}
	amd, err := core.PinFor(hw.PlatformAMD, stack)
	if err != nil {
		return err
	}
	// mega: Megatron's arguments from the launch's own preflight command (everything after "--").
	mega, err := p.Build(req(hw.PlatformNVIDIA, core.Mega))
	if err != nil {
		return err
	}
	i := slices.Index(mega.Preflight.Command, "--")
	if i < 0 {
		return fmt.Errorf("conformance: mega's preflight passes no Megatron arguments after --: %v", mega.Preflight.Command)
	}
	if err := p.WriteLaunch(dir("mega"), mega); err != nil {
		return err
	}
	p.add(Run{Name: name("mega"), Model: fam.Model, Argv: p.conform("megatron", fam.Model, sl, append([]string{p.Tree("megatron-" + nvd.MegatronCommit[:8]),
		p.In(path.Join(dir("mega"), "preflight")), "--"}, mega.Preflight.Command[i+1:]...)...)}, mega)
	p.Pairs = append(p.Pairs, Pair{fam.Model, "fsdp", rel("mega")})

	// nemo: the NVIDIA launch's Bridge configuration through Megatron-Bridge's own config classes,
	// validation, provider and scheduler, on the trees the NeMo image ships.
	nr := req(hw.PlatformNVIDIA, core.Nemo)
	nr.OutputDir = p.In(dir("nemo"))
	nm, err := p.Build(nr)
	if err != nil {
		return err
	}
	if err := p.WriteLaunch(dir("nemo"), nm); err != nil {
		return err
	}
	p.add(Run{Name: name("nemo"), Model: fam.Model, Argv: p.conform("nemo", fam.Model, sl, p.Tree("bridge-v"+nvd.Bridge),
		p.Tree("megatron-"+nvd.MegatronCommit[:8]), nr.OutputDir)}, nm)
	p.Pairs = append(p.Pairs, Pair{fam.Model, "fsdp", rel("nemo")})

	// prim: the AMD launch's experiment file and overrides through Primus's runtime, on the trees the
	// AMD image ships.
	pr := req(hw.PlatformAMD, core.Prim)
	pr.OutputDir = p.In(dir("prim"))
	prim, err := p.Build(pr)
	if err != nil {
		return err
	}
	if err := p.WriteLaunch(dir("prim"), prim); err != nil {
		return err
	}
	pargs := []string{p.Tree("primus-" + amd.Primus), p.Tree("megatron-" + amd.MegatronCommit[:8]), path.Join(pr.OutputDir, "preflight"), prim.Env["EXP"]}
	if i := slices.Index(prim.Preflight.Command, "--"); i > 0 {
		pargs = append(pargs, prim.Preflight.Command[i:]...)
	}
	p.add(Run{Name: name("prim"), Model: fam.Model, Argv: p.conform("primus", fam.Model, sl, pargs...),
		Env: map[string]string{"RIVAL_DEVICE_CAPABILITY": prim.Preflight.Env["RIVAL_DEVICE_CAPABILITY"]}}, prim)
	p.Pairs = append(p.Pairs, Pair{fam.Model, "fsdp", rel("prim")})

	// titan: TorchTitan with Rival's train spec, from the launch's job file.
	tl, err := p.Build(req(hw.PlatformNVIDIA, core.Titan))
	if err != nil {
		return err
	}
	if err := p.WriteLaunch(dir("titan"), tl); err != nil {
		return err
	}
	tdir := p.In(dir("titan"))
	p.add(Run{Name: name("titan"), Model: fam.Model, Argv: p.conform("titan", fam.Model, sl, p.Tree("torchtitan-"+nvd.TorchTitan), tdir, path.Join(tdir, titan.TOMLName))}, tl)
	p.Pairs = append(p.Pairs, Pair{fam.Model, "fsdp", rel("titan")})

	return nil
}

// Batches are the first n samples (seqLen + 1 tokens each) of Rival's order (gptorder, proven equal
// to Megatron's GPTDataset order in its tests) over the sample corpus (testdata/sample under repo)
// encoded with tokenizer/testdata/<tok> into the indexed dataset prefix.
func Batches(ctx context.Context, repo, tok string, vocab, seqLen, n int, prefix string) ([][]int32, error) {
	if err := encodeCorpus(ctx, repo, tok, vocab, prefix); err != nil {
		return nil, err
	}
	ds, err := indexed.Open(prefix)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	defer ds.Close()
	x, err := gptorder.Build(ds.Lengths(), 0, ds.Sequences(), gptorder.Order{Seed: Seed, SeqLen: seqLen, NumSamples: int64(n), AddExtraToken: true})
	if err != nil {
		return nil, fmt.Errorf("conformance: sample order: %w", err)
	}
	var out [][]int32
	for i := range int64(n) {
		s, err := x.Tokens(ds, i, nil)
		if err != nil {
			return nil, fmt.Errorf("conformance: sample %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// encodeCorpus encodes the sample corpus with tokenizer tok into the indexed dataset prefix.
func encodeCorpus(ctx context.Context, repo, tok string, vocab int, prefix string) error {
	tk, err := tokenizer.Load(TokenizerFile(repo, tok))
	if err != nil {
		return fmt.Errorf("conformance: %w (run from the repository's root, or pass its folder)", err)
	}
	if tk.VocabSize() > vocab {
		return fmt.Errorf("conformance: tokenizer %s has %d ids, more than the model's %d", tok, tk.VocabSize(), vocab)
	}
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	_, err = encode.File(ctx, []string{filepath.Join(repo, "testdata", "sample", "corpus.jsonl")}, prefix, encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()),
	})
	if err != nil {
		return fmt.Errorf("conformance: encoding the sample corpus: %w", err)
	}
	return nil
}

// TokenizerFile is the tokenizer.json of tokenizer tok in the repository at repo.
func TokenizerFile(repo, tok string) string {
	return filepath.Join(repo, "tokenizer", "testdata", tok, "tokenizer.json")
}

// WriteScript writes run.sh, which starts every run in order (output and exit status under out/,
// one progress line each), and plan.json, which Collect reads.
func (p *Plan) WriteScript() error {
	var sh strings.Builder
	sh.WriteString("#!/bin/bash\n# Rival's numerical conformance (docs/frameworks.md): every framework's own code on one\n# checkpoint and the same batches. Written by rival-conform; Collect reads out/.\n")
	sh.WriteString("set -u\ncd \"$(dirname \"$0\")\"\nmkdir -p " + OutDir + "\n")
	fmt.Fprintf(&sh, "export RIVAL_CONFORM_THREADS=%d RIVAL_CONFORM_DEVICE=%s RIVAL_CONFORM_DTYPE=%s PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1\n",
		p.Threads, p.Device, p.DType)
	sh.WriteString("failed=0\n")
	for i, r := range p.Runs {
		env := ""
		for _, k := range slices.Sorted(maps.Keys(r.Env)) {
			env += k + "=" + shellQuote(r.Env[k]) + " "
		}
		fmt.Fprintf(&sh, "echo \"conformance: [%d/%d] %s\"; s=$SECONDS\n", i+1, len(p.Runs), strings.ReplaceAll(r.Name, `"`, ""))
		fmt.Fprintf(&sh, "env %s%s > %s/%d.txt 2>&1; rc=$?; echo $rc > %s/%d.rc\n", env, shellJoin(r.Argv), OutDir, i, OutDir, i)
		fmt.Fprintf(&sh, "if [ $rc = 0 ]; then echo \"conformance: [%d/%d] ok in $((SECONDS-s)) s\"; else failed=$((failed+1)); echo \"conformance: [%d/%d] failed (exit $rc): tail of %s/%d.txt\"; tail -n 5 %s/%d.txt; fi\n",
			i+1, len(p.Runs), i+1, len(p.Runs), OutDir, i, OutDir, i)
	}
	sh.WriteString("echo \"conformance: $failed of " + fmt.Sprint(len(p.Runs)) + " runs failed\"\n")
	if err := p.Write(ScriptFile, []byte(sh.String())); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(p.Dir, ScriptFile), 0o755); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	return p.Write(PlanFile, b)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shellJoin(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = shellQuote(s)
	}
	return strings.Join(q, " ")
}

// TrainRequest is the request of a training run of framework on model as a GPU plan trains it: one
// NVIDIA GPU in bf16, MBS 2 × GA 4 (GBS 8) at seqLen (0: 2048, past the Mistral proxy's window),
// steps steps with a fifth of them warm-up, the data, tokenizer and output under root.
func TrainRequest(framework, model string, steps, seqLen int, root string) core.Request {
	if seqLen == 0 {
		seqLen = 2048
	}
	return core.Request{
		Platform: hw.PlatformNVIDIA, Framework: framework, Model: model, GPUs: 1,
		Host: hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0}}},
		Fair: core.Fair{Seed: Seed, MBS: 2, SL: seqLen, GA: 4, GBS: 8, TP: 1, PP: 1, DP: 1,
			TrainIters: steps, WarmupSteps: max(1, steps/5), LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95,
			Precision: core.BF16, ProfileStepStart: 1, ProfileStepEnd: 2, ProfileRanks: []int{0}},
		DataPrefix: path.Join(root, "data", "corpus"), DataCacheDir: path.Join(root, "data", "cache"),
		TokenizerPath: path.Join(root, "tokenizer"), OutputDir: path.Join(root, framework),
	}
}

// training adds the family's fsdp and TorchTitan training runs: the sample corpus encoded for the
// model with its sample order written (as train writes them), the tokenizer, and each launch.
func (p *Plan) training(ctx context.Context, fam Family, m models.Model, nvd core.Pin) error {
	base := path.Join("train", fam.Model)
	dir := filepath.Join(p.Dir, filepath.FromSlash(base))
	if err := encodeCorpus(ctx, p.Repo, fam.Tokenizer, m.Vocab, filepath.Join(dir, "data", "corpus")); err != nil {
		return err
	}
	tj, err := os.ReadFile(TokenizerFile(p.Repo, fam.Tokenizer))
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	if err := p.Write(path.Join(base, "tokenizer", "tokenizer.json"), tj); err != nil {
		return err
	}
	for _, fw := range []string{core.FSDP, core.Titan} {
		req := TrainRequest(fw, fam.Model, p.TrainSteps, p.TrainSeqLen, p.In(base))
		if fw == core.FSDP {
			if err := writeOrder(filepath.Join(dir, "data", "corpus"), filepath.Join(dir, "data", "cache"), req.Fair); err != nil {
				return err
			}
		}
		l, err := p.Build(req)
		if err != nil {
			return err
		}
		if err := p.WriteLaunch(path.Join(base, fw), l); err != nil {
			return err
		}
		argv := slices.Clone(l.Command)
		switch fw {
		case core.FSDP:
			if argv[0] != "python3" {
				return fmt.Errorf("conformance: fsdp's launch starts %q, not python3", argv[0])
			}
			argv[0] = p.Python
		case core.Titan:
			// torchtitan.train ARGS as the one process torchrun would start (its environment set
			// here, without torchrun's rendezvous), with the packages a plain torch lacks stood in.
			i := slices.Index(argv, "torchtitan.train")
			if argv[0] != "torchrun" || i < 0 {
				return fmt.Errorf("conformance: titan's launch is not torchrun -m torchtitan.train: %v", argv)
			}
			argv = append([]string{p.Python, p.In(ScriptName), "titan-train", p.Tree("torchtitan-" + nvd.TorchTitan), req.OutputDir, "--"}, argv[i+1:]...)
			env := maps.Clone(l.Env)
			maps.Copy(env, map[string]string{"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
				"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29531"})
			l.Env = env
		}
		family := l.LogFamily
		if family == "" {
			family = fw
		}
		r := Run{Name: fam.Model + "/" + fw + " training", Kind: KindTrain, Framework: fw, Model: fam.Model, Argv: argv, Env: l.Env, LogFamily: family}
		p.Runs = append(p.Runs, r)
		p.Launches[r.Name] = l
	}
	return nil
}

// writeOrder writes the sample order of f over the dataset at prefix into cacheDir, as train writes
// it for a run (Megatron's GPTDataset indices over the whole dataset, split 100,0,0), where fsdp's
// train.py and titan's extension read it.
func writeOrder(prefix, cacheDir string, f core.Fair) error {
	ds, err := indexed.Open(prefix)
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	defer ds.Close()
	beg, end, err := gptorder.TrainRange("100,0,0", len(ds.Lengths()))
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	x, err := gptorder.Build(ds.Lengths(), beg, end, gptorder.Order{Seed: uint32(f.Seed), SeqLen: f.SL,
		NumSamples: int64(f.TrainIters) * int64(f.GBS), AddExtraToken: true})
	if err != nil {
		return fmt.Errorf("conformance: sample order: %w", err)
	}
	return x.Write(cacheDir)
}
