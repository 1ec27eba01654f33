package core

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRan(t *testing.T) {
	tests := []struct {
		name, content, want, errHas string
	}{
		{"ordered", `{"torch":"2.10.0a0","version":"0.3.0","framework":"megatron-bridge","megatron_core":"0.16.0"}`,
			"megatron-bridge 0.3.0, megatron_core 0.16.0, torch 2.10.0a0", ""},
		{"not strings", `{"framework":"megatron-bridge","version":3}`, "", "not a JSON object of strings"},
		{"no version", `{"framework":"megatron-bridge"}`, "", `lacks "framework" or "version"`},
		{"truncated", `{"framework":`, "", "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ran.json"), []byte(tc.content), 0o644))
			got, err := Launch{RanFile: "ran.json"}.Ran(dir)
			if tc.errHas != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errHas)
				assert.Contains(t, err.Error(), "ran.json", "the error names the file")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := Launch{RanFile: "missing.json"}.Ran(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 0")
	_, err = Launch{}.Ran(t.TempDir())
	require.Error(t, err)
}

func TestLogFamilyName(t *testing.T) {
	assert.Equal(t, "mega", Launch{Framework: "mega"}.LogFamilyName())
	assert.Equal(t, "megatron-bridge", Launch{Framework: "nemo", LogFamily: "megatron-bridge"}.LogFamilyName())
}

func FuzzRan(f *testing.F) {
	f.Add([]byte(`{"framework":"megatron-bridge","version":"0.3.0"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "r.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		Launch{RanFile: "r.json"}.Ran(dir) // must not panic
	})
}
