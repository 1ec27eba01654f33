package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyFixture copies one of the hw package's real tool captures into a node's record.
func copyFixture(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "hw", "testdata", from))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

func TestReadNodeHardware(t *testing.T) {
	out := t.TempDir()
	nodes := filepath.Join(out, "nodes")
	for node, host := range map[string]string{"gpu01": "gpu01.cluster", "gpu02": "gpu02.cluster", "mi01": "mi01", "cpu01": "cpu01", "bad01": "bad01"} {
		require.NoError(t, os.MkdirAll(filepath.Join(nodes, node), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(nodes, node, "hostname.txt"), []byte(host+"\n"), 0o644))
	}
	copyFixture(t, "nvidia/h100-sxm/query-gpu.csv", filepath.Join(nodes, "gpu01", "nvidia-smi.csv"))
	copyFixture(t, "nvidia/h200/query-gpu.csv", filepath.Join(nodes, "gpu02", "nvidia-smi.csv"))
	copyFixture(t, "amd-smi/mi300x-x8-wrapped.json", filepath.Join(nodes, "mi01", "amd-smi-static.json"))
	require.NoError(t, os.WriteFile(filepath.Join(nodes, "bad01", "nvidia-smi.csv"), []byte("NVIDIA-SMI has failed\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(nodes, "unfinished"), 0o755)) // no hostname.txt yet

	got, err := ReadNodeHardware(out)
	require.NoError(t, err)
	require.Len(t, got, 5)
	byNode := map[string]NodeHardware{}
	for _, n := range got {
		byNode[n.Node] = n
	}
	assert.Equal(t, []string{"bad01", "cpu01", "gpu01", "gpu02", "mi01"}, []string{got[0].Node, got[1].Node, got[2].Node, got[3].Node, got[4].Node})
	assert.Equal(t, "gpu01.cluster", byNode["gpu01"].Hostname)
	assert.Equal(t, "nvidia-smi", byNode["gpu01"].Tool)
	require.Len(t, byNode["gpu01"].GPUs, 1)
	assert.Equal(t, "H100 SXM", byNode["gpu01"].GPUs[0].Model)
	assert.Equal(t, "amd-smi", byNode["mi01"].Tool)
	require.Len(t, byNode["mi01"].GPUs, 8)
	assert.Equal(t, "MI300X", byNode["mi01"].GPUs[0].Model)
	assert.Equal(t, "", byNode["cpu01"].Tool)
	assert.Empty(t, byNode["cpu01"].GPUs)
	assert.Equal(t, "", byNode["bad01"].Tool)
	assert.NotEmpty(t, byNode["bad01"].Warnings)

	none, err := ReadNodeHardware(t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestNodeImageID(t *testing.T) {
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	write := func(t *testing.T, ids map[string]string) string {
		dir := t.TempDir()
		for node, id := range ids {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "nodes", node), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "nodes", node, NodeImageIDName), []byte(id+"\n"), 0o644))
		}
		return dir
	}
	for _, tc := range []struct {
		name    string
		ids     map[string]string
		want    string
		wantErr string
	}{
		{"no records", nil, "", ""},
		{"one node", map[string]string{"n1": a}, a, ""},
		{"two nodes agree", map[string]string{"n1": a, "n2": a}, a, ""},
		{"two nodes differ", map[string]string{"n1": a, "n2": b}, "", "the nodes ran different images (" + a + " on n1; " + b + " on n2)"},
		{"not an ID", map[string]string{"n1": "Error: no such image"}, "", "not an image ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodeImageID(write(t, tc.ids))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
