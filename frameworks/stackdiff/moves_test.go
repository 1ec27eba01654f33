package stackdiff_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/stackdiff"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
)

// facts reads a committed facts file (frameworks/facts).
func facts(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "facts", name+".json"))
	require.NoError(t, err)
	return b
}

func find(r *stackdiff.Report, kind, area, name string) *stackdiff.Change {
	for i, c := range r.Changes {
		if c.Kind == kind && (area == "" || c.Area == area) && c.Name == name {
			return &r.Changes[i]
		}
	}
	return nil
}

// TestStackDiffReproducesTheMoves: the moves from last winter's stacks to today's, read from the
// pinned snapshots' facts and trees: Primus's Turbo switches renamed (and the check that stops a
// run setting an old name), Bridge's evaluation settings deprecated for ValidationConfig and its
// Llama 3.1 provider gone, TorchTitan's loss and training loop changed and its determinism switch
// moved, Megatron's new RoPE variant.
func TestStackDiffReproducesTheMoves(t *testing.T) {
	trees := upstreamtest.Get(t)
	tree := func(name string, more ...string) *stackdiff.Tree {
		var extra []string
		for _, m := range more {
			extra = append(extra, filepath.Join(trees.Dir, m))
		}
		tr, err := stackdiff.ReadTree(filepath.Join(trees.Dir, name), extra...)
		require.NoError(t, err)
		return tr
	}
	diff := func(fw, oldFacts, newFacts string, ot, nt *stackdiff.Tree) *stackdiff.Report {
		used, err := stackdiff.UsedNames(fw, frameworks.Build)
		require.NoError(t, err)
		r, err := stackdiff.DiffFacts(fw, facts(t, oldFacts), facts(t, newFacts), ot, nt, used)
		require.NoError(t, err)
		t.Logf("%s: %s → %s: %d changes, %d touch Rival's launches", fw, r.Old, r.New, len(r.Changes), len(r.Touching()))
		return r
	}

	prim := diff(stackdiff.Primus, "primus_v26.2", "primus_v26.5.1", tree("primus-v26.2"), tree("primus-v26.5.1"))
	assert.Equal(t, "Primus v26.2 (1ec29c67) → Primus v26.5.1 (9a86ba8c)", prim.Old+" → "+prim.New)
	c := find(prim, stackdiff.Renamed, "module", "use_turbo_grouped_mlp")
	require.NotNil(t, c, "Primus v26.4 renamed use_turbo_grouped_mlp")
	assert.Equal(t, "use_turbo_grouped_gemm", c.NewName)
	assert.True(t, c.Touches, "prim's launches set use_turbo_grouped_mlp")
	assert.Equal(t, "primus/backends/megatron/patches/args/rocm_arg_validation.py:161", c.Where)
	assert.Contains(t, c.Note, "has been removed; please use use_turbo_grouped_gemm instead")
	c = find(prim, stackdiff.Renamed, "module", "use_turbo_parallel_linear")
	require.NotNil(t, c)
	assert.Equal(t, "use_turbo_gemm", c.NewName)
	assert.False(t, c.Touches, "Rival never sets the dense-GEMM switch")
	require.NotNil(t, find(prim, stackdiff.Renamed, "stock llama3.1_8B-BF16-pretrain.yaml", "use_turbo_grouped_mlp"), "the stock experiment too")
	assert.NotNil(t, find(prim, stackdiff.File, "file", "examples/run_pretrain.sh"))

	nemo := diff(stackdiff.Bridge, "bridge_0.3.0", "bridge_0.5.0", tree("bridge-v0.3.0", "megatron-b0cc2706"), tree("bridge-v0.5.0", "megatron-d0b3b775"))
	for _, f := range []string{"eval_iters", "eval_interval"} {
		c := find(nemo, stackdiff.Deprecated, "section train", f)
		require.NotNil(t, c, "Bridge 0.5 deprecates train.%s", f)
		assert.True(t, c.Touches, "nemo's launches write train.%s", f)
		assert.True(t, strings.HasPrefix(c.Where, "src/megatron/bridge/training/config.py:"), c.Where)
		assert.Contains(t, c.Note, "Deprecated in favor of ValidationConfig")
	}
	c = find(nemo, stackdiff.Added, "class ConfigContainer", "validation")
	require.NotNil(t, c, "the validation section")
	c = find(nemo, stackdiff.Removed, "classes", "Llama31ModelProvider")
	require.NotNil(t, c, "Bridge 0.5 has no Llama31ModelProvider")
	assert.True(t, c.Touches, "rival_nemo.py builds Llama 3.1 with it")
	assert.Nil(t, find(nemo, stackdiff.Removed, "class Llama31ModelProvider", "rotary_base"), "a class that is gone is one change")
	assert.Nil(t, find(nemo, stackdiff.Type, "section checkpoint", "load"), "Optional[str] and str | None are one type")

	titan := diff(stackdiff.TorchTitan, "torchtitan_v0.2.0", "torchtitan_v0.2.2", tree("torchtitan-v0.2.0"), tree("torchtitan-v0.2.2"))
	c = find(titan, stackdiff.File, "file", "torchtitan/components/loss.py")
	require.NotNil(t, c, "TorchTitan v0.2.2 normalises the loss by the valid tokens (#2206)")
	assert.True(t, c.Touches)
	c = find(titan, stackdiff.Moved, "[training]", "deterministic")
	require.NotNil(t, c)
	assert.Equal(t, "[debug] deterministic", c.NewName)
	assert.True(t, c.Touches, "titan's job file sets training.deterministic")

	mega := diff(stackdiff.Megatron, "megatron_b0cc2706", "megatron_d0b3b775", tree("megatron-b0cc2706"), tree("megatron-d0b3b775"))
	c = find(mega, stackdiff.Type, "arguments", "--position-embedding-type (choices)")
	require.NotNil(t, c, "Megatron Core 0.18 adds yarn")
	assert.Contains(t, c.New, `"yarn"`)
	assert.True(t, c.Touches)
	assert.Equal(t, "megatron/training/arguments.py:2115", c.Where)
}

// TestStackDiffTarget runs stack:diff's entry point on the two Primus snapshots: the extractor on
// each tree, then the report, as Markdown and as JSON.
func TestStackDiffTarget(t *testing.T) {
	trees := upstreamtest.Get(t)
	old, cur := filepath.Join(trees.Dir, "primus-v26.2"), filepath.Join(trees.Dir, "primus-v26.5.1")
	ot, err := stackdiff.ParseTrees(stackdiff.Primus, old)
	require.NoError(t, err)
	nt, err := stackdiff.ParseTrees(stackdiff.Primus, cur)
	require.NoError(t, err)
	rep, err := stackdiff.Run(context.Background(), stackdiff.Primus, ot, nt, stackdiff.Options{Repo: filepath.Join("..", ".."), Python: trees.Python, Build: frameworks.Build})
	require.NoError(t, err)
	md := rep.Markdown()
	assert.Contains(t, md, "# stack:diff prim: Primus v26.2 (v26.2) → Primus v26.5.1 (v26.5.1)")
	assert.Contains(t, md, "## Touches Rival's launches")
	assert.Contains(t, md, "`use_turbo_grouped_mlp → use_turbo_grouped_gemm`")
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var back stackdiff.Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, len(rep.Changes), len(back.Changes))

	_, err = stackdiff.ParseTrees(stackdiff.Primus, filepath.Join(trees.Dir, "no-such-tree"))
	assert.ErrorContains(t, err, "is not a folder")
	_, err = stackdiff.Run(context.Background(), "deepspeed", ot, nt, stackdiff.Options{})
	assert.ErrorContains(t, err, `no framework "deepspeed"`)
	_, err = stackdiff.Run(context.Background(), stackdiff.Primus, stackdiff.Trees{Root: t.TempDir()}, nt, stackdiff.Options{Repo: filepath.Join("..", ".."), Python: trees.Python, Build: frameworks.Build})
	assert.ErrorContains(t, err, "extract_primus.py")
}
