package tasks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestConfigDefaults(t *testing.T) {
	c, err := loadConfig(filepath.Join(t.TempDir(), "missing.env"), "", envFrom(nil))
	require.NoError(t, err)
	assert.Equal(t, 42, c.int("SEED"))
	assert.Equal(t, 64, c.int("GBS"), "GBS derives from MBS×DP×GA")
	assert.Equal(t, "bf16", c.get("PRECISION"))
	assert.Equal(t, []string{"llama", "qwen", "mistral"}, c.list("MODELS"))
}

func TestRepoConfigEnvLoads(t *testing.T) {
	c, err := loadConfig("../config.env", "", envFrom(nil))
	require.NoError(t, err)
	assert.Equal(t, 2048, c.int("SL"))
	assert.Equal(t, 0.8, c.float("TRAIN_SPLIT"))
}

func TestConfigFileAndEnvOverride(t *testing.T) {
	p := writeFile(t, "config.env", "# fair config\nSL=4096\nexport LR=\"1e-4\"\nGA=4 # fewer steps\n")
	c, err := loadConfig(p, "", envFrom(map[string]string{"SL": "1024", "UNRELATED": "x"}))
	require.NoError(t, err)
	assert.Equal(t, 1024, c.int("SL"), "environment wins over the file")
	assert.Equal(t, 1e-4, c.float("LR"))
	assert.Equal(t, 32, c.int("GBS"))
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"unknown key", "SEQLEN=2048\n", nil, "config.env:1: unknown key SEQLEN"},
		{"not a KEY=VALUE", "SL 2048\n", nil, "config.env:1: expected KEY=VALUE"},
		{"bad int", "SL=2k\n", nil, `config SL (from `},
		{"bad int message", "MBS=two\n", nil, `"two" is not an integer`},
		{"bad float", "", map[string]string{"LR": "fast"}, `config LR (from environment): "fast" is not a number`},
		{"bad enum", "PRECISION=fp16\n", nil, "not one of bf16, fp8, fp32"},
		{"gbs mismatch", "GBS=100\n", nil, "config GBS (from "},
		{"gbs mismatch detail", "GBS=100\n", nil, "MBS×DP×GA = 1×8×8 = 64"},
		{"split", "TRAIN_SPLIT=0\n", nil, "TRAIN_SPLIT"},
		{"beta range", "BETA2=1.5\n", nil, "config BETA2"},
		{"unknown model", "MODELS=llama,gpt\n", nil, `unknown model "gpt"`},
		{"profile order", "PROFILE_STEP_START=20\nPROFILE_STEP_END=10\n", nil, "PROFILE_STEP_END"},
		{"bool", "PROFILE=maybe\n", nil, "not a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "config.env", tt.file)
			_, err := loadConfig(p, "", envFrom(tt.env))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	sec := writeFile(t, "secrets.env", "HF_TOKEN=hf_abcdefSECRET\n")
	c, err := loadConfig("", sec, envFrom(nil))
	require.NoError(t, err)
	assert.Equal(t, "hf_abcdefSECRET", c.secret("HF_TOKEN"))
	assert.NotContains(t, c.String(), "SECRET")
	for _, v := range c.trainingValues() {
		assert.NotContains(t, v, "SECRET")
	}
	bad := writeFile(t, "secrets.env", "hf_abcdefSECRET\n")
	_, err = loadConfig("", bad, envFrom(nil))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "SECRET")
}

func TestFingerprintTracksTrainingKeysOnly(t *testing.T) {
	base, _ := loadConfig("", "", envFrom(nil))
	jobs, _ := loadConfig("", "", envFrom(map[string]string{"JOBS": "3"}))
	sl, _ := loadConfig("", "", envFrom(map[string]string{"SL": "4096"}))
	assert.Equal(t, base.fingerprint(), jobs.fingerprint())
	assert.NotEqual(t, base.fingerprint(), sl.fingerprint())
	assert.True(t, strings.HasPrefix(base.fingerprint().String(), base.fingerprint().Short()))
}

// FuzzLoadConfig: any config.env content loads or fails with an error,
// never panics, and a loaded config always satisfies its own invariants.
func FuzzLoadConfig(f *testing.F) {
	f.Add("SL=4096\nGA=4\n")
	f.Add("# comment\nexport LR=\"1e-4\"\nGBS=64\n")
	f.Add("MODELS=llama,,qwen\nTRAIN_SPLIT=1\n")
	f.Add("SL\n=\n'\"\n")
	f.Fuzz(func(t *testing.T, content string) {
		p := filepath.Join(t.TempDir(), "config.env")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := loadConfig(p, "", envFrom(nil))
		if err != nil {
			return
		}
		if c.int("GBS") != c.int("MBS")*c.int("DP")*c.int("GA") {
			t.Fatalf("loaded config breaks GBS = MBS×DP×GA: %s", c)
		}
		if s := c.float("TRAIN_SPLIT"); s <= 0 || s > 1 {
			t.Fatalf("TRAIN_SPLIT %g loaded", s)
		}
		_ = c.fingerprint()
	})
}

// Held-out evaluation keys enter the fingerprint only when evaluation is on, so every run keyed
// before they existed keeps its key; on, they are training keys like any other, and the interval
// must fit whole iterations.
func TestEvalKeysFingerprintOnlyWhenOn(t *testing.T) {
	base, err := loadConfig("", "", envFrom(nil))
	require.NoError(t, err)
	off, err := loadConfig("", "", envFrom(map[string]string{"EVAL_SAMPLES": "64"}))
	require.NoError(t, err)
	assert.Equal(t, base.fingerprint(), off.fingerprint(), "EVAL_SAMPLES without an interval changes nothing a run does")
	assert.NotContains(t, base.trainingValues(), "EVAL_INTERVAL_SAMPLES")
	assert.Equal(t, "4bf9f2ad0769c46a", base.fingerprint().Short(), "the default fingerprint is the one before the evaluation keys existed")
	gbs := base.int("GBS")
	on, err := loadConfig("", "", envFrom(map[string]string{"EVAL_INTERVAL_SAMPLES": strconv.Itoa(4 * gbs)}))
	require.NoError(t, err)
	assert.NotEqual(t, base.fingerprint(), on.fingerprint())
	on2, err := loadConfig("", "", envFrom(map[string]string{"EVAL_INTERVAL_SAMPLES": strconv.Itoa(4 * gbs), "EVAL_SAMPLES": "512"}))
	require.NoError(t, err)
	assert.NotEqual(t, on.fingerprint(), on2.fingerprint())

	_, err = loadConfig("", "", envFrom(map[string]string{"EVAL_INTERVAL_SAMPLES": strconv.Itoa(gbs + 1)}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "EVAL_INTERVAL_SAMPLES")
	assert.Contains(t, err.Error(), "is not a multiple of GBS")
	_, err = loadConfig("", "", envFrom(map[string]string{"EVAL_INTERVAL_SAMPLES": strconv.Itoa(gbs), "EVAL_SAMPLES": "3"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "EVAL_SAMPLES 3 is not a multiple of MBS×DP")
}
