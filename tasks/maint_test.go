package tasks

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wrap zips OUTPUT_DIR beside it and says where the zip is.
func TestWrapTargetSaysWhereTheZipIs(t *testing.T) {
	w, log := newWorkspace(t, "")
	require.ErrorContains(t, w.WrapTarget(context.Background()), "nothing to wrap")

	out := w.path("OUTPUT_DIR")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "train_amd_prim_llama.json"), []byte(`{"platform":"amd"}`), 0o644))
	require.NoError(t, w.WrapTarget(context.Background()))
	// The zip is named for the host, with every character but [-._0-9a-zA-Z] as "_".
	host, _ := os.Hostname()
	zipPath := filepath.Join(w.root, "rival-results-"+regexp.MustCompile(`[^-._0-9a-zA-Z]`).ReplaceAllString(host, "_")+".zip")
	assert.FileExists(t, zipPath)
	assert.Contains(t, log.String(), "wrap: "+zipPath+"\n")
}
