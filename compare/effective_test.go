package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/result"
)

// The fairness table compares what the frameworks built (their effective configurations), field by
// field, not only what was requested.
func TestFairnessComparesEffectiveConfigurations(t *testing.T) {
	mk := func(fw string, eps float64) *Group {
		r := &result.Result{Framework: result.Framework{Name: fw}}
		r.EffectiveConfig = &effective.Config{Hidden: 3584, NormEps: eps, NoDecay: []string{"bias", "norm"}}
		return &Group{Config: configOf(r)}
	}
	s := &ModelSection{Groups: []*Group{mk("mega", 1e-6), mk("prim", 1e-5)}}
	s.fairness()
	var rows []string
	for _, r := range s.Fairness {
		rows = append(rows, r.Field)
		if r.Field == "effective.norm_eps" {
			assert.Equal(t, []string{"1e-06", "1e-05"}, r.Values)
		}
	}
	assert.Contains(t, rows, "effective.norm_eps")
	assert.NotContains(t, rows, "effective.hidden")
	assert.Contains(t, s.Identical, "effective.hidden")
	assert.Contains(t, s.Identical, "effective.no_decay")
	assert.NotContains(t, s.Unrecorded, "effective configuration")

	// Without any recorded effective configuration the section says so in one entry.
	none := &ModelSection{Groups: []*Group{{Config: configOf(&result.Result{Framework: result.Framework{Name: "mega"}})}}}
	none.fairness()
	require.Contains(t, none.Unrecorded, "effective configuration")
	for _, f := range none.Unrecorded {
		assert.NotContains(t, f, "effective.")
	}
}

// The fairness table names the sample digest when compared results trained on other batches
// (sample_order.blake3 differs), read through Load and Analyze as compare:dir does.
func TestFairnessShowsDifferingSampleDigests(t *testing.T) {
	digestA, digestB := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, tc := range []struct {
		name         string
		amd, nvd     string
		row, inEqual bool
	}{
		{"differ", digestA, digestB, true, false},
		{"equal", digestA, digestA, false, true},
		{"one unrecorded", digestA, "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for src, digest := range map[string]string{"amd_primus_llama_0.json": tc.amd, "nvd_nemo_llama_0.json": tc.nvd} {
				raw, err := os.ReadFile(filepath.Join("testdata", "results", src))
				require.NoError(t, err)
				var m map[string]any
				require.NoError(t, json.Unmarshal(raw, &m))
				if digest != "" {
					m["sample_order"] = map[string]any{"order": "megatron-gptdataset", "seed": 1234, "sequence_length": 8192,
						"samples": 1408, "digest_samples": 1024, "blake3": digest, "sha256": digest, "framework_sha256": digest}
				}
				out, err := json.Marshal(m)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, src), out, 0o644))
			}
			inputs, _, err := Load(context.Background(), []string{dir}, nil)
			require.NoError(t, err)
			require.Len(t, inputs, 2)
			rep, err := Analyze(inputs, DefaultPrices())
			require.NoError(t, err)
			var b bytes.Buffer
			require.NoError(t, rep.WriteMarkdown(&b))
			md := b.String()
			row := "| sample\\_digest | " + tc.amd + " | "
			if tc.row {
				assert.Contains(t, md, row, "a fairness row for the sample digest")
			} else {
				assert.NotContains(t, md, "| sample\\_digest |")
			}
			if tc.inEqual {
				assert.Regexp(t, `Recorded and equal in every group: [^\n]*sample_digest`, md)
			}
			assert.NotContains(t, md, "Recorded by no group (unknown, so not known to be equal): sample order")
		})
	}
}
