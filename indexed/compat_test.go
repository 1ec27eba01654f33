package indexed

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// python is the interpreter the compatibility test uses: Debian's, where
// python3-numpy and python3-torch install.
const python = "/usr/bin/python3"

func requirePython(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import numpy, torch").CombinedOutput()
	if err != nil {
		t.Skipf("Megatron compatibility test skipped: %s with numpy and torch is needed (Debian: apt-get install python3-numpy python3-torch): %v: %s",
			python, err, strings.TrimSpace(string(out)))
	}
}

func runPython(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(python, args...).CombinedOutput()
	require.NoError(t, err, "%s %v:\n%s", python, args, out)
	return string(out)
}

func sameBytes(t *testing.T, want, got string) {
	t.Helper()
	for _, ext := range []string{".bin", ".idx"} {
		a, err := os.ReadFile(want + ext)
		require.NoError(t, err)
		b, err := os.ReadFile(got + ext)
		require.NoError(t, err)
		require.True(t, string(a) == string(b), "%s%s (%d bytes) differs from the reference %s%s (%d bytes)", got, ext, len(b), want, ext, len(a))
	}
}

// TestMegatronCompatibility writes documents with Rival and with a Python
// writer that keeps Megatron's builder bookkeeping, and requires identical
// bytes; an independent Python reader then checks every token of Rival's
// files. Merging is checked against the builder's add_index too.
func TestMegatronCompatibility(t *testing.T) {
	requirePython(t)
	for _, tc := range []struct {
		name  string
		dtype DType
		vocab int
	}{
		{"mistral-uint16", DTypeForVocab(32000), 32000},
		{"uint16-edge", DTypeForVocab(65499), 65499},
		{"llama-int32", DTypeForVocab(128256), 128256},
		{"qwen-int32", DTypeForVocab(151665), 151665},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(uint64(tc.vocab), 3))
			docs := randomDocs(r, 400, int32(tc.vocab))
			docs[0] = []int32{0, int32(tc.vocab - 1)} // extremes of the vocabulary
			docs = append(docs, nil)                  // a trailing empty document
			spec := map[string]any{"dtype": tc.dtype.String(), "docs": docs}
			for i, d := range docs {
				if d == nil {
					docs[i] = []int32{} // JSON [] rather than null
				}
			}
			js, err := json.Marshal(spec)
			require.NoError(t, err)
			docsPath := filepath.Join(dir, "docs.json")
			require.NoError(t, os.WriteFile(docsPath, js, 0o644))

			rival := writeDocs(t, dir, "rival", tc.dtype, docs)
			builder := filepath.Join("testdata", "megatron_builder.py")
			byDocument := filepath.Join(dir, "ref-documents")
			runPython(t, builder, "documents", docsPath, byDocument)
			sameBytes(t, byDocument, rival)
			byItem := filepath.Join(dir, "ref-items")
			runPython(t, builder, "items", docsPath, byItem)
			sameBytes(t, byItem, rival)

			out := runPython(t, filepath.Join("testdata", "megatron_reader.py"), rival, docsPath)
			assert.Contains(t, out, "ok sequences=")

			// Shards merged by Rival equal shards merged by add_index.
			var shards []string
			for i, cut := range [][2]int{{0, 150}, {150, 150}, {150, len(docs)}} {
				shards = append(shards, writeDocs(t, dir, "shard"+string(rune('a'+i)), tc.dtype, docs[cut[0]:cut[1]]))
			}
			merged := filepath.Join(dir, "merged")
			require.NoError(t, Merge(merged, shards))
			refMerged := filepath.Join(dir, "ref-merged")
			runPython(t, append([]string{builder, "merge", tc.dtype.String(), refMerged}, shards...)...)
			sameBytes(t, refMerged, merged)
			sameBytes(t, rival, merged)
		})
	}
}
