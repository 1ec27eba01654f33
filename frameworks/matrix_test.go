package frameworks

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/prim"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// variant changes config.env's fair configuration for one column of the matrix.
type variant struct {
	name string
	set  func(r *core.Request)
}

var variants = []variant{
	{"base", func(*core.Request) {}},
	{"TP2", func(r *core.Request) { r.Fair.TP, r.Fair.DP = 2, 4 }},
	{"TP4-PP2", func(r *core.Request) { r.Fair.TP, r.Fair.PP, r.Fair.DP = 4, 2, 1 }},
	{"fp8", func(r *core.Request) { r.Fair.Precision = core.FP8 }},
	{"fp32", func(r *core.Request) { r.Fair.Precision = core.FP32 }},
	{"profile", func(r *core.Request) { r.Fair.Profile, r.Fair.ProfileRanks = true, []int{0, 3} }},
	{"SL8192", func(r *core.Request) { r.Fair.SL = 8192 }}, // Mistral's 4096 window masks at 8192
	{"two-nodes", func(r *core.Request) { r.NNodes, r.Fair.DP = 2, 16 }},
}

var matrixModels = []string{"llama", "qwen", "mistral", "llama-proxy", "qwen-proxy", "mistral-proxy"}

// forMatrix calls check for every mega and prim launch of the matrix: both platforms for mega, amd
// for prim. Cells the registry refuses (a proxy's head count that TP4 does not divide, or its 4096
// positions at SL 8192) must be
// refused with the reason, and are skipped.
func forMatrix(t *testing.T, check func(t *testing.T, r core.Request, l core.Launch)) {
	for _, c := range []struct{ platform, fw string }{{hw.PlatformAMD, "mega"}, {hw.PlatformNVIDIA, "mega"}, {hw.PlatformAMD, "prim"}} {
		for _, stack := range core.StackNames {
			for _, m := range matrixModels {
				for _, v := range variants {
					t.Run(stack+"/"+c.platform+"/"+c.fw+"/"+m+"/"+v.name, func(t *testing.T) {
						r := request(t, c.platform, c.fw, m)
						r.Stack = stack
						v.set(&r)
						l, err := Build(r)
						if err != nil && strings.HasSuffix(m, "-proxy") && (strings.Contains(err.Error(), "does not divide") || strings.Contains(err.Error(), "positions of")) {
							t.Skipf("refused as it should be: %v", err)
						}
						require.NoError(t, err)
						check(t, r, l)
					})
				}
			}
		}
	}
}

// megatronArgs returns the arguments a mega launch gives pretrain_gpt.py.
func megatronArgs(t *testing.T, l core.Launch) []string {
	require.Equal(t, []string{"bash", "-c"}, l.Command[:2])
	n, err := strconv.Atoi(l.Command[4])
	require.NoError(t, err)
	return l.Command[5+n:]
}

// primOverrides returns the pre_trainer overrides a prim launch ends with, as Python values: the
// experiment file's (as SafeLoader reads it) with the command line's (as the core runtime types them)
// on top, and the model config file the experiment names.
func primOverrides(t *testing.T, l core.Launch) (map[string]any, string, string) {
	exp := l.Env["EXP"]
	require.NotEmpty(t, exp)
	var src []byte
	for name, b := range l.Files {
		if strings.HasSuffix(exp, "/"+name) {
			src = b
		}
	}
	require.NotNil(t, src, "the launch writes its experiment file %s", exp)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(src, &doc))
	v, err := facts.TypeYAML(&doc)
	require.NoError(t, err)
	root := v.(map[string]any)
	pt := root["modules"].(map[string]any)["pre_trainer"].(map[string]any)
	ov := map[string]any{}
	if o, ok := pt["overrides"].(map[string]any); ok {
		ov = o
	}
	var cli []string // command-line overrides after run_pretrain.sh
	if len(l.Command) > 1 && l.Command[1] == prim.Script {
		cli = l.Command[2:]
	}
	for i := 0; i < len(cli); i++ {
		k := strings.TrimPrefix(cli[i], "--")
		if i+1 < len(cli) && !strings.HasPrefix(cli[i+1], "--") {
			ov[k] = facts.TypeCLI(cli[i+1])
			i++
		} else {
			ov[k] = true
		}
	}
	stock := ""
	if s, ok := strings.CutPrefix(strings.SplitN(string(src), "\n", 2)[0], "# "+prim.StockComment); ok {
		stock = strings.TrimSpace(s)
	}
	return ov, pt["model"].(string), stock
}

func TestMatrixAgainstUpstreamFacts(t *testing.T) {
	forMatrix(t, func(t *testing.T, r core.Request, l core.Launch) {
		pin, err := core.PinFor(r.Platform, r.Stack)
		require.NoError(t, err)
		assert.Equal(t, pin.Name(), l.Stack, "the launch names its stack")
		mg, err := facts.MegatronAt(pin.MegatronCommit)
		require.NoError(t, err)
		switch l.Framework {
		case "mega":
			vals, err := mg.Parse(megatronArgs(t, l))
			require.NoError(t, err)
			if r.Fair.Profile {
				assert.Equal(t, path.Join(r.OutputDir, "profile"), vals["tensorboard_dir"])
			}
		case "prim":
			pr, err := facts.PrimusAt(pin.Primus)
			require.NoError(t, err)
			ov, model, stock := primOverrides(t, l)
			require.NoError(t, pr.CheckOverrides(model, mg, ov))
			assert.True(t, pr.HasEXP(stock), "started from %q, which Primus %s ships under %s", stock, pr.Tag, pr.EXPDir)
			wantPrec := "BF16"
			if r.Fair.Precision == core.FP8 {
				wantPrec = "FP8"
			}
			assert.Contains(t, stock, "-"+wantPrec+"-pretrain.yaml")
			if r.Fair.Profile {
				assert.Equal(t, []any{int64(0), int64(3)}, ov["profile_ranks"])
			}
			assert.Equal(t, r.Fair.MinLR, ov["min_lr"])
			assert.Equal(t, core.AdamEps, ov["adam_eps"])
		}
	})
}

// Negative controls: the checks catch an unknown option, a value of the wrong type and min_lr above lr
// in a launch built the way the targets build it.
func TestMatrixNegativeControls(t *testing.T) {
	r := request(t, hw.PlatformNVIDIA, "mega", "llama")
	l, err := Build(r)
	require.NoError(t, err)
	pin, _ := core.PinFor(hw.PlatformNVIDIA, "")
	mg, err := facts.MegatronAt(pin.MegatronCommit)
	require.NoError(t, err)
	args := megatronArgs(t, l)
	for name, c := range map[string]struct {
		argv []string
		want string
	}{
		"unknown option":  {append(append([]string{}, args...), "--overlap-everything"), "unrecognized arguments: --overlap-everything"},
		"wrong type":      {replaceArg(args, "--num-layers", "32.0"), "invalid int value"},
		"min_lr above lr": {replaceArg(args, "--min-lr", "0.003"), "min_lr 0.003 is above lr 0.0003"},
	} {
		_, err := mg.Parse(c.argv)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}

	amd, _ := core.PinFor(hw.PlatformAMD, "")
	pr, err := facts.PrimusAt(amd.Primus)
	require.NoError(t, err)
	rp := request(t, hw.PlatformAMD, "prim", "llama")
	lp, err := Build(rp)
	require.NoError(t, err)
	ov, model, _ := primOverrides(t, lp)
	mgA, err := facts.MegatronAt(amd.MegatronCommit)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		k    string
		v    any
		want string
	}{
		"unknown key":     {"overlap_everything", true, "overlap_everything: not a key"},
		"wrong type":      {"min_lr", facts.TypeCLI("3e-05"), "converts to float, got str"},
		"min_lr above lr": {"min_lr", 0.003, "min_lr 0.003 is above lr 0.0003"},
	} {
		bad := map[string]any{}
		for k, v := range ov {
			bad[k] = v
		}
		bad[c.k] = c.v
		err := pr.CheckOverrides(model, mgA, bad)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

func replaceArg(args []string, flag, v string) []string {
	out := append([]string{}, args...)
	for i := range out {
		if out[i] == flag {
			out[i+1] = v
		}
	}
	return out
}

// TestPrimModelReachesTransformerConfig runs Primus's own config merge and Megatron's argument
// validation on prim launches (testdata/readback/prim_transformer_config.py, on the pinned trees
// with torch stood in) and reads back the TransformerConfig Megatron Core would build: every model
// fact must arrive there, not merely be accepted as a key.
func TestPrimModelReachesTransformerConfig(t *testing.T) {
	dir := upstreamDir(t)
	py := os.Getenv("RIVAL_PREFLIGHT_PYTHON")
	if py == "" {
		py = "python3"
	}
	for _, model := range []string{"llama", "qwen", "mistral", "qwen-proxy"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			r := request(t, hw.PlatformAMD, "prim", model)
			r.OutputDir = t.TempDir()
			if model == "mistral" {
				r.Fair.SL = 8192 // past the window, so window_size must be set
			}
			l, err := Build(r)
			require.NoError(t, err)
			for name, b := range l.Files {
				p := filepath.Join(r.OutputDir, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, b, 0o644))
			}
			pin, err := core.PinFor(hw.PlatformAMD, "")
			require.NoError(t, err)
			facts, err := filepath.Abs("facts")
			require.NoError(t, err)
			cmd := exec.Command(py, filepath.Join("testdata", "readback", "prim_transformer_config.py"), facts,
				filepath.Join(dir, "primus-"+pin.Primus), filepath.Join(dir, "megatron-"+pin.MegatronCommit[:8]),
				core.Int(8), l.Env["EXP"])
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			var got struct {
				TC   map[string]any `json:"transformer_config"`
				Args map[string]any `json:"args"`
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), string(out))
			m, err := models.Lookup(model)
			require.NoError(t, err)
			assert.Equal(t, m.NormEps, got.TC["layernorm_epsilon"], "RMSNorm ε in TransformerConfig")
			assert.Equal(t, float64(m.Layers), got.TC["num_layers"])
			assert.Equal(t, float64(m.Hidden), got.TC["hidden_size"])
			assert.Equal(t, float64(m.FFN), got.TC["ffn_hidden_size"])
			assert.Equal(t, float64(m.KVHeads), got.TC["num_query_groups"])
			assert.Equal(t, m.QKVBias, got.TC["add_qkv_bias"])
			assert.Equal(t, m.InitStd, got.TC["init_method_std"])
			assert.Equal(t, m.RopeTheta, got.Args["rotary_base"])
			assert.Equal(t, !m.TiedEmbeddings, got.Args["untie_embeddings_and_output_weights"])
			if r.Fair.SL > m.SlidingWindow && m.SlidingWindow > 0 {
				assert.Equal(t, []any{float64(m.SlidingWindow), 0.0}, got.TC["window_size"])
			} else {
				assert.Nil(t, got.TC["window_size"])
			}
		})
	}
}
