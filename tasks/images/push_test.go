package images

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
)

// Without a push, the refusal is true on any host: where this host built the image it says the
// image is only in its daemon; where nothing is known (a login node with no Docker daemon at all)
// it says no push is recorded, and how to deliver one either way.
func TestUnpushedImageMessagesAreTrueWithoutADaemon(t *testing.T) {
	b := Builder{OutputDir: t.TempDir()}
	_, _, err := b.SlurmImage(hw.PlatformNVIDIA, "", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this workspace records no pushed nvd image ("+filepath.Join(b.OutputDir, "images", "nvd-pushed.json")+" does not exist)")
	assert.NotContains(t, err.Error(), "only in this host's Docker daemon")
	assert.Contains(t, err.Error(), "`go run mage.go image:push nvd REGISTRY/REPOSITORY[:TAG]`")
	assert.Contains(t, err.Error(), "SLURM_IMAGE")

	built := &Record{Platform: hw.PlatformNVIDIA, Tag: "rival/nvd:latest", ImageID: "sha256:0123456789abcdef"}
	_, _, err = b.SlurmImage(hw.PlatformNVIDIA, "", built)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rival/nvd:latest (0123456789ab) is only in this host's Docker daemon")

	_, err = b.KubeImage(hw.PlatformAMD, "", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this workspace records no pushed amd image")
	assert.Contains(t, err.Error(), "KUBE_IMAGE=REPOSITORY@sha256:...")

	ref, err := b.PushedRef(hw.PlatformAMD)
	require.NoError(t, err)
	assert.Empty(t, ref)
	require.NoError(t, os.MkdirAll(filepath.Join(b.OutputDir, "images"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(b.OutputDir, "images", "amd-pushed.json"),
		[]byte(`{"platform":"amd","repository":"registry.example.com/team/rival-amd","digest":"sha256:`+strings.Repeat("ab", 32)+`","local_id":"sha256:1"}`), 0o644))
	ref, err = b.PushedRef(hw.PlatformAMD)
	require.NoError(t, err)
	assert.Equal(t, "registry.example.com/team/rival-amd@sha256:"+strings.Repeat("ab", 32), ref)
}
