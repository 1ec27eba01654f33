package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func golden(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/results", name))
	require.NoError(t, err)
	return data
}

func TestLoadDedupesAndNamesCacheBlobs(t *testing.T) {
	data := golden(t, "nvd_nemo_llama_0.json")
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "host2", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host2", "deep", "copy.json"), data, 0o644))
	inputs, problems, err := Load(context.Background(), []string{dir}, [][]byte{data})
	require.NoError(t, err)
	assert.Empty(t, problems)
	require.Len(t, inputs, 1, "a result found twice counts once")
	assert.Len(t, inputs[0].Duplicates, 1)
	assert.True(t, strings.HasPrefix(inputs[0].Duplicates[0], "cache:"))
	assert.True(t, strings.HasPrefix(inputs[0].Fingerprint, "blake3:"))

	_, _, err = Load(context.Background(), []string{filepath.Join(dir, "absent")}, nil)
	assert.ErrorContains(t, err, "absent")
}

// A result from the cache is named by the first 16 hex digits of its
// BLAKE3-256 and fingerprinted by the whole digest. "abc" is not a result, so
// its problem shows the name; its digest is the BLAKE3 reference test
// vector 6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85.
func TestCacheBlobNameIsShortDigest(t *testing.T) {
	_, problems := LoadFiles(context.Background(), nil, [][]byte{[]byte("abc")})
	require.Len(t, problems, 1)
	assert.Equal(t, "cache:6437b3ac38465133", problems[0].Source)
	assert.Equal(t, "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85", fingerprint([]byte("abc")))
}

func TestAnalyzeZeroResults(t *testing.T) {
	_, err := Analyze(nil, DefaultPrices())
	assert.ErrorIs(t, err, ErrNoResults)
}

func TestMixedSchemaVersionsAndMissingFields(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(golden(t, "amd_primus_llama_0.json"), &doc))
	doc["schema_version"] = "1.1"
	doc["config_fingerprint"] = nil
	doc["a_future_field"] = 3
	later, err := json.Marshal(doc)
	require.NoError(t, err)
	in, prob := Parse("later.json", later)
	require.Nil(t, prob)
	assert.Contains(t, in.Format, "1.1")
	assert.Contains(t, in.Missing, "config_fingerprint")
	assert.NotEmpty(t, in.Notes)

	old, prob := Parse("train_amd_prim_mistral.json", golden(t, "train_amd_prim_mistral.json"))
	require.Nil(t, prob)
	assert.Equal(t, FormatOldSuite, old.Format)
	assert.Contains(t, old.Missing, "dataset.fingerprint")
	assert.Contains(t, old.Missing, "memory_metrics.peak_allocated_mib", "the old AMD file recorded no memory")
	assert.Contains(t, strings.Join(old.Notes, " "), "NaN")
	assert.Equal(t, "MI300X", *old.Result.GPUInfo.SpecModel)
	assert.Equal(t, "primus", old.Result.Framework.Name)
	assert.True(t, old.Result.TrainingConfig.PrecisionAssumed)

	rep, err := Analyze([]Input{*in, *old}, DefaultPrices())
	require.NoError(t, err)
	assert.Len(t, rep.Models, 2)
	var md strings.Builder
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "rival-1.1 (read leniently)")
	assert.Contains(t, md.String(), "config_fingerprint")
}

func TestProvenanceDifferencesAreListed(t *testing.T) {
	with := func(name, entry, seed string) []byte {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(golden(t, name), &doc))
		doc["provenance"] = map[string]any{
			"run_index": 0, "host": "h", "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T01:00:00Z",
			"entry_script_digest": entry, "remapped": nil, "launch_command": nil, "launch_env": nil,
			"data_prefix": "data/bc", "tokenizer_path": "tok", "image_id": nil, "container_id": nil,
			"slurm_job_id": nil, "node_list": nil, "config": map[string]any{"SEED": seed, "LR": "3.0e-4"},
		}
		out, err := json.Marshal(doc)
		require.NoError(t, err)
		return out
	}
	diffs, err := CompareInputs(with("nvd_nemo_llama_0.json", "e1", "42"), with("nvd_nemo_llama_1.json", "e2", "43"))
	require.NoError(t, err)
	var fields []string
	for _, d := range Mismatches(diffs) {
		fields = append(fields, d.Field)
	}
	assert.ElementsMatch(t, []string{"provenance.entry_script_digest", "provenance.config.SEED"}, fields)

	got := reproducing()
	got.EntryScriptDigest.Value = "e1"
	rec, err := ReadResult(with("nvd_nemo_llama_0.json", "e1", "42"))
	require.NoError(t, err)
	assert.Empty(t, Failed(VerifyResult(rec, got)))
}

func TestReplaceNonFinite(t *testing.T) {
	out, n := replaceNonFinite([]byte(`{"a": NaN, "b": [Infinity, -Infinity], "s": "NaN Infinity \"NaN\""}`))
	assert.Equal(t, 3, n)
	assert.JSONEq(t, `{"a": null, "b": [null, null], "s": "NaN Infinity \"NaN\""}`, string(out))
}

func TestParsePriceEnv(t *testing.T) {
	p, err := ParsePriceEnv(DefaultPrices(), []string{"PRICE_H100=3.50", "PRICE_MI300X=$2", "PATH=/bin", "PRICE_h200=4"})
	require.NoError(t, err)
	assert.Equal(t, 3.50, p.Prices["H100 SXM"].USDPerGPUHour)
	assert.Equal(t, 2.0, p.Prices["MI300X"].USDPerGPUHour)
	assert.Equal(t, 4.0, p.Prices["H200"].USDPerGPUHour)
	assert.Equal(t, 2.99, DefaultPrices().Prices["H100 SXM"].USDPerGPUHour, "the defaults are not modified")
	for _, bad := range []string{"PRICE_H100=abc", "PRICE_H100=-1", "PRICE_=1", "PRICE_MI300X=NaN"} {
		_, err := ParsePriceEnv(DefaultPrices(), []string{bad})
		assert.Error(t, err, bad)
	}
	for _, d := range DefaultPrices().Prices {
		assert.NotEmpty(t, d.Date)
		assert.Contains(t, d.Source, "https://")
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"nvd_nemo_llama_0.json", "train_amd_prim_mistral.json", "broken.json", "nvd_nemo_llama_nan_tps.json"} {
		data, err := os.ReadFile(filepath.Join("testdata/results", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(name, data)
	}
	f.Add("train_nvd_nemo_llama.json", []byte(`{"performance_metrics": {"tokens_per_second_per_gpu": 1e308}, "step_times": [NaN, -1, 0]}`))
	f.Fuzz(fuzzOne)
}

// TestParseMutations runs the fuzz body over fixed-seed byte mutations of the
// golden inputs, so the property is exercised on every plain `go test` too.
func TestParseMutations(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	for _, name := range []string{"nvd_nemo_llama_0.json", "train_amd_prim_mistral.json", "amd_primus_qwen.json"} {
		data := golden(t, name)
		for range 300 {
			m := append([]byte(nil), data...)
			for range 1 + rng.Intn(4) {
				m[rng.Intn(len(m))] = "0123456789.-eE,:{}[]\" N"[rng.Intn(23)]
			}
			fuzzOne(t, name, m)
		}
	}
}

func fuzzOne(t *testing.T, name string, data []byte) {
	{
		in, prob := Parse(name, data)
		if (in == nil) == (prob == nil) {
			t.Fatalf("exactly one of input and problem must be set: %v %v", in, prob)
		}
		if in == nil {
			return
		}
		// whatever parses must analyze and render its report without panicking
		rep, err := Analyze([]Input{*in}, DefaultPrices())
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		if err := rep.WriteMarkdown(&sb); err != nil {
			t.Fatal(err)
		}
		rep.Console(&sb)
		if r, err := ReadResult(data); err == nil {
			_ = VerifyResult(r, reproducing())
		}
		_, _ = CompareInputs(data, data)
	}
}

// The old suite recorded its platform stack (ROCm or CUDA version, torch),
// not the framework's version: the report must not print it as the
// framework's ("Primus rocm 7.1.0").
func TestOldSuiteStackIsNotTheFrameworkVersion(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"train_amd_prim_mistral.json", "train_nvd_nemo_mistral.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), golden(t, f), 0o644))
	}
	inputs, _, err := Load(context.Background(), []string{dir}, nil)
	require.NoError(t, err)
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, rep.WriteMarkdown(&b))
	md := b.String()
	assert.NotContains(t, md, "Primus rocm")
	assert.NotContains(t, md, "NeMo nemo")
	assert.Contains(t, md, "Primus version not recorded (platform stack rocm 7.1.0, torch 2.7.0)")
	for _, in := range inputs {
		assert.Nil(t, in.Result.Framework.Version, in.Source)
	}
}

// A compare stopped by Ctrl-C stops reading results and says so, rather
// than reading every file and reporting what it found.
func TestLoadStopsWhenTheContextEnds(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "results", "amd_primus_llama_0.json"))
	require.NoError(t, err)
	for i := range 50 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%02d.json", i)), data, 0o644))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	inputs, problems, err := Load(ctx, []string{dir}, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, inputs)
	assert.Empty(t, problems)

	inputs, _, err = Load(context.Background(), []string{dir}, nil)
	require.NoError(t, err)
	assert.NotEmpty(t, inputs, "the same folder loads when not stopped")
}
