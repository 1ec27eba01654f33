package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/conformance"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/titan"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/tokenizer"
)

// batches are the first Steps global batches of Rival's order (gptorder, proven equal to Megatron's
// GPTDataset order in its tests) over the sample corpus encoded with tokenizer tokDir.
func batches(t *testing.T, tokDir string, vocab int) [][]int32 {
	t.Helper()
	tk, err := tokenizer.Load(filepath.Join("..", "..", "tokenizer", "testdata", tokDir, "tokenizer.json"))
	require.NoError(t, err)
	require.LessOrEqual(t, tk.VocabSize(), vocab, "the corpus's ids fit the model's vocabulary")
	prefix := filepath.Join(t.TempDir(), "corpus")
	_, err = encode.File(context.Background(), []string{filepath.Join("..", "..", "testdata", "sample", "corpus.jsonl")}, prefix, encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()),
	})
	require.NoError(t, err)
	ds, err := indexed.Open(prefix)
	require.NoError(t, err)
	defer ds.Close()
	n := int64(conformance.Steps * conformance.GBS)
	x, err := gptorder.Build(ds.Lengths(), 0, ds.Sequences(), gptorder.Order{Seed: conformance.Seed, SeqLen: conformance.SeqLen, NumSamples: n, AddExtraToken: true})
	require.NoError(t, err)
	var out [][]int32
	for i := int64(0); i < n; i++ {
		s, err := x.Tokens(ds, i, nil)
		require.NoError(t, err)
		out = append(out, s)
	}
	return out
}

// run is one framework's conformance run inside the container. A mutant carries one planted drift
// and must differ from its reference from step firstStep on.
type run struct {
	name      string
	argv      []string
	reference string
	firstStep int
}

// TestFrameworksComputeTheSameNumbers: for each model family at its proxy size, the frameworks' own
// code (fsdp's trainer, TorchTitan with Rival's train spec, Megatron Core's GPTModel from mega's launch
// arguments) trains Steps steps on the CPU in fp32 from one checkpoint and the same batches; every
// step's loss, gradient norm, learning rate and per-parameter gradient norms agree within
// conformance.DefaultTolerance.
func TestFrameworksComputeTheSameNumbers(t *testing.T) {
	trees := upstreamtest.Get(t)
	e := upstreamtest.TorchEngine(t)
	const upstream, root = "/upstream", "/rival"
	host := t.TempDir()
	write := func(rel string, b []byte) {
		p := filepath.Join(host, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	write(conformance.ScriptName, conformance.Script())
	families := []struct{ model, tok string }{{"llama-proxy", "mistral-7b-v0.1"}, {"qwen-proxy", "qwen-2.5"}, {"mistral-proxy", "mistral-7b-v0.1"}}
	var runs []run
	type pair struct{ model, a, b string }
	var pairs []pair
	for _, fam := range families {
		m, err := models.Lookup(fam.model)
		require.NoError(t, err)
		ckpt := path.Join(root, fam.model, "checkpoint")
		require.NoError(t, conformance.WriteCheckpoint(filepath.Join(host, fam.model, "checkpoint"), m, conformance.Seed))
		bpath := path.Join(root, fam.model, "batches.i64")
		require.NoError(t, conformance.WriteBatches(filepath.Join(host, fam.model, "batches.i64"), batches(t, fam.tok, m.Vocab)))
		common := []string{"python3", path.Join(root, conformance.ScriptName), "", ckpt, bpath, fmt.Sprint(conformance.GBS), fmt.Sprint(conformance.Steps), fmt.Sprint(conformance.SeqLen)}
		with := func(kind string, rest ...string) []string {
			a := append([]string(nil), common...)
			a[2] = kind
			return append(a, rest...)
		}

		fsdp, err := frameworks.Build(conformance.Request(hw.PlatformCPU, core.FSDP, fam.model))
		require.NoError(t, err)
		dir := path.Join(root, fam.model, "fsdp")
		write(path.Join(fam.model, "fsdp", "train.py"), fsdp.Files["train.py"])
		runs = append(runs, run{name: fam.model + "/fsdp", argv: with("fsdp", append([]string{"--", path.Join(dir, "train.py")}, fsdp.Command[2:]...)...)})
		fsdpRun := runs[len(runs)-1]

		mega, err := frameworks.Build(conformance.Request(hw.PlatformNVIDIA, core.Mega, fam.model))
		require.NoError(t, err)
		pf := mega.Preflight.Command
		i := indexOf(pf, "--")
		require.Positive(t, i, "mega's preflight passes Megatron's arguments after --: %v", pf)
		for n, b := range mega.Files {
			write(path.Join(fam.model, "mega", n), b)
		}
		runs = append(runs, run{name: fam.model + "/mega", argv: with("megatron", append([]string{path.Join(upstream, "megatron-b0cc2706"),
			path.Join(root, fam.model, "mega", "preflight"), "--"}, pf[i+1:]...)...)})
		pairs = append(pairs, pair{fam.model, "fsdp", "mega"})
		if fam.model == "llama-proxy" {
			// Planted drifts, each of a kind the read-back of arguments missed before: the numbers
			// must part from the reference at the step the drift first acts.
			megaRun := runs[len(runs)-1]
			runs = append(runs, run{name: fam.model + "/mega with --rotary-base 10000 appended",
				argv: append(append([]string(nil), megaRun.argv...), "--rotary-base", "10000"), reference: fam.model + "/mega", firstStep: 1})
			unscaled := slices.DeleteFunc(append([]string(nil), megaRun.argv...), func(a string) bool { return a == "--use-rope-scaling" })
			require.Len(t, unscaled, len(megaRun.argv)-1, "mega's Llama launch scales its RoPE")
			runs = append(runs, run{name: fam.model + "/mega without --use-rope-scaling", argv: unscaled, reference: fam.model + "/mega", firstStep: 1})
			runs = append(runs, run{name: fam.model + "/fsdp with --beta2 0.999 appended",
				argv: append(append([]string(nil), fsdpRun.argv...), "--beta2", "0.999"), reference: fam.model + "/fsdp", firstStep: 3})
			script := strings.Replace(string(fsdp.Files["train.py"]), "inv = 1.0 / args.rope_theta ** (", "inv = 1.0 / 10000.0 ** (", 1)
			require.NotEqual(t, string(fsdp.Files["train.py"]), script, "the drift applies")
			write(path.Join(fam.model, "fsdp-rope", "train.py"), []byte(script))
			argv := append([]string(nil), fsdpRun.argv...)
			argv[indexOf(argv, path.Join(dir, "train.py"))] = path.Join(root, fam.model, "fsdp-rope", "train.py")
			runs = append(runs, run{name: fam.model + "/fsdp computing RoPE with base 10000", argv: argv, reference: fam.model + "/fsdp", firstStep: 1})
		}

		tl, err := frameworks.Build(conformance.Request(hw.PlatformNVIDIA, core.Titan, fam.model))
		require.NoError(t, err)
		tdir := path.Join(root, fam.model, "titan")
		for n, b := range tl.Files {
			write(path.Join(fam.model, "titan", n), b)
		}
		runs = append(runs, run{name: fam.model + "/titan", argv: with("titan", path.Join(upstream, "torchtitan-v0.2.0"), tdir, path.Join(tdir, titan.TOMLName))})
		pairs = append(pairs, pair{fam.model, "fsdp", "titan"})
	}
	var sh strings.Builder
	sh.WriteString("export RIVAL_CONFORM_THREADS=2 PYTHONDONTWRITEBYTECODE=1\n")
	for i, r := range runs {
		fmt.Fprintf(&sh, "%s > %s/out-%d.txt 2>&1; echo $? > %s/rc-%d.txt\n", shellJoin(r.argv), root, i, root, i)
	}
	write("run.sh", []byte(sh.String()))
	spec := container.RunSpec{
		Image: upstreamtest.TorchImage, RunID: fmt.Sprintf("conformance-%d", time.Now().UnixNano()),
		Cmd: []string{"bash", root + "/run.sh"}, Network: "none", Platform: container.PlatformCPU, Timeout: 40 * time.Minute,
		Mounts: []container.Mount{{Source: trees.Dir, Target: upstream, ReadOnly: true}, {Source: host, Target: root}},
	}
	// Before the test's own deadline the container is stopped, not left running.
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-20*time.Second))
		defer cancel()
	}
	var lines []string
	_, err := e.Run(ctx, spec, func(l string) { lines = append(lines, l) })
	var exit *container.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, strings.Join(lines, "\n"))
	}
	steps := map[string][]conformance.Step{}
	for i, r := range runs {
		out, _ := os.ReadFile(filepath.Join(host, fmt.Sprintf("out-%d.txt", i)))
		rc, _ := os.ReadFile(filepath.Join(host, fmt.Sprintf("rc-%d.txt", i)))
		if !assert.Equal(t, "0", strings.TrimSpace(string(rc)), "%s failed:\n%s", r.name, tail(string(out), 40)) {
			continue
		}
		s, err := conformance.ParseSteps(strings.Split(string(out), "\n"))
		require.NoError(t, err, r.name)
		require.Len(t, s, conformance.Steps, "%s:\n%s", r.name, tail(string(out), 20))
		steps[r.name] = s
		for _, st := range s {
			t.Logf("%s step %d: loss %.8f grad norm %.8f lr %.6g", r.name, st.Step, st.Loss, st.GradNorm, st.LR)
		}
	}
	for _, r := range runs {
		if r.reference == "" || steps[r.name] == nil || steps[r.reference] == nil {
			continue
		}
		err := conformance.Check(r.reference, steps[r.reference], r.name, steps[r.name], conformance.DefaultTolerance)
		var ce *conformance.Error
		if assert.ErrorAs(t, err, &ce, "%s: the planted drift is not seen", r.name) {
			assert.Equal(t, r.firstStep, ce.Mismatches[0].Step, "%s: parts at %s", r.name, ce.Mismatches[0])
			t.Logf("%s: caught: %v", r.name, err)
		}
	}
	for _, p := range pairs {
		a, b := steps[p.model+"/"+p.a], steps[p.model+"/"+p.b]
		if a == nil || b == nil {
			continue
		}
		assert.NoError(t, conformance.Check(p.model+"/"+p.a, a, p.model+"/"+p.b, b, conformance.DefaultTolerance))
		worst := map[string]float64{}
		ms, _ := conformance.Compare(a, b, conformance.Tolerance{})
		for _, m := range ms {
			q := m.Quantity
			if strings.HasPrefix(q, "grad ") {
				q = "grad"
			}
			worst[q] = max(worst[q], m.Rel)
		}
		t.Logf("%s: %s against %s: largest relative difference %v", p.model, p.b, p.a, worst)
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func shellJoin(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
