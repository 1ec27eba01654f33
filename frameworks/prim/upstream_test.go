package prim_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/hw"
)

// tokenizerDir holds the model's real tokenizer.json: Qwen's and Mistral's from tokenizer/testdata,
// Llama 3.1's from ../shared/tokenizers (RIVAL_SHARED_DIR).
func tokenizerDir(t *testing.T, model string) string {
	t.Helper()
	base := strings.TrimSuffix(model, "-proxy")
	d := filepath.Join("..", "..", "tokenizer", "testdata", map[string]string{"qwen": "qwen-2.5", "mistral": "mistral-7b-v0.1"}[base])
	if base == "llama" {
		shared := os.Getenv("RIVAL_SHARED_DIR")
		if shared == "" {
			shared = filepath.Join("..", "..", "..", "shared")
		}
		d = filepath.Join(shared, "tokenizers", "llama-3.1")
	}
	abs, err := filepath.Abs(d)
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(abs, "tokenizer.json")); err != nil {
		upstreamtest.Missing(t, "no tokenizer.json in "+abs+" (set RIVAL_SHARED_DIR to the folder holding tokenizers/llama-3.1)")
	}
	return abs
}

// The preflight runs Primus's own start-up path (frameworks/facts/preflight.py) on each stack's
// launches with that stack's unpacked Primus and Megatron-LM trees.
func TestPreflightOnEveryStack(t *testing.T) {
	tr := upstreamtest.Get(t)
	for _, stack := range core.StackNames {
		pin, err := core.PinFor(hw.PlatformAMD, stack)
		require.NoError(t, err)
		primusTree := tr.Tree(t, "primus-"+pin.Primus)
		megatronTree := tr.Tree(t, "megatron-"+pin.MegatronCommit[:8])
		for _, m := range models {
			for _, v := range []string{core.BF16, core.FP8, "profile"} {
				if v == "profile" && m != "qwen" {
					continue
				}
				t.Run(stack+"/"+m+"/"+v, func(t *testing.T) {
					r := request(stack, m, v)
					if v == "profile" {
						r.Fair.Precision, r.Fair.Profile, r.Fair.ProfileRanks = core.BF16, true, []int{0, 3}
					}
					r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, m)
					l, err := frameworks.Build(r)
					require.NoError(t, err)
					require.NotNil(t, l.Preflight)
					out, err := runPreflight(t, l, r.OutputDir, primusTree, megatronTree)
					require.NoError(t, err, out)
					assert.Contains(t, out, "preflight ok: primus "+primusTree)
					assert.Contains(t, out, `preflight primus patches: {"before_train": [`)
					// What Megatron built through Primus is the workload, field by field.
					c, found, err := effective.FromLines(strings.Split(out, "\n"))
					require.NoError(t, err)
					require.True(t, found, "the preflight reports the effective configuration")
					p, err := frameworks.Validate(r, core.Prim)
					require.NoError(t, err)
					assert.NoError(t, effective.Check(core.Prim, p, c))
				})
			}
		}
	}
}

// runPreflight writes the launch's files under outDir and runs its preflight on the given trees.
func runPreflight(t *testing.T, l core.Launch, outDir, primusTree, megatronTree string) (string, error) {
	t.Helper()
	require.NotNil(t, l.Preflight)
	for name, b := range l.Files {
		p := filepath.Join(outDir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	cmd := exec.Command(upstreamtest.Get(t).Python, l.Preflight.Command[1:]...)
	cmd.Dir = l.Preflight.WorkDir
	cmd.Env = os.Environ()
	for k, v := range l.Preflight.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, mega.DirEnv+"="+megatronTree, frameworks.PrimusDirEnv+"="+primusTree)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Negative control: Primus v26.5.1 stops a launch that turns on the grouped GEMM switch by its old
// name, which the previous stack's launches write; the preflight reports Primus's own message. Set to
// false the old name passes Primus unnoticed, so only Build's key check (knownKeys) keeps it out.
func TestPreflightStopsTheOldTurboNameOnTheCurrentStack(t *testing.T) {
	tr := upstreamtest.Get(t)
	pin, err := core.PinFor(hw.PlatformAMD, core.StackCurrent)
	require.NoError(t, err)
	primusTree := tr.Tree(t, "primus-"+pin.Primus)
	megatronTree := tr.Tree(t, "megatron-"+pin.MegatronCommit[:8])
	for _, v := range []string{"true", "false"} {
		t.Run(v, func(t *testing.T) {
			r := request(core.StackCurrent, "qwen", core.BF16)
			r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, "qwen")
			l, err := frameworks.Build(r)
			require.NoError(t, err)
			for name, b := range l.Files {
				if strings.HasSuffix(name, "-exp.yaml") {
					s := strings.Replace(string(b), "use_turbo_grouped_gemm: false", "use_turbo_grouped_mlp: "+v, 1)
					require.NotEqual(t, string(b), s)
					l.Files[name] = []byte(s)
				}
			}
			out, err := runPreflight(t, l, r.OutputDir, primusTree, megatronTree)
			if v == "false" {
				require.NoError(t, err, out)
				return
			}
			require.Error(t, err, out)
			assert.Contains(t, out, "preflight failed: megatron validate_args with Primus's ROCm checks")
			assert.Contains(t, out, "use_turbo_grouped_mlp has been removed; please use use_turbo_grouped_gemm instead")
		})
	}
}
