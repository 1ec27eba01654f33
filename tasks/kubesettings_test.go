package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
)

// A Kubernetes run that lacks several settings names them all in one error, before anything is
// built; train:k8s-manifest and CLUSTER=k8s runs alike.
func TestKubeSettingsMissingAreNamedTogether(t *testing.T) {
	w, _ := newWorkspace(t, "")
	w.env = w.env.with(map[string]string{"KUBE_IMAGE": "", "KUBE_DATA_CLAIM": "", "KUBE_OUTPUT_CLAIM": "", "GPUS_PER_NODE": "8"})
	err := w.KubeManifestTarget(context.Background(), hw.PlatformNVIDIA, "mega", "llama")
	require.Error(t, err)
	for _, name := range []string{"KUBE_IMAGE", "KUBE_DATA_CLAIM", "KUBE_OUTPUT_CLAIM"} {
		assert.Contains(t, err.Error(), name+" (", "every missing setting is named")
	}
	assert.Contains(t, err.Error(), "train:k8s-manifest: a Kubernetes run of nvd needs 3 settings that are not set")
	assert.Contains(t, err.Error(), "`go run mage.go image:push nvd REGISTRY/REPOSITORY[:TAG]`")

	// A CLUSTER=k8s run is refused the same way, before the executor (which builds the image).
	w.env = w.env.with(map[string]string{"CLUSTER": "k8s", "KUBE_DATA_CLAIM": "rival-data"})
	w.config, err = w.config.with("test", map[string]string{"NNODES": "2", "DP": "2"})
	require.NoError(t, err)
	err = w.TrainTarget(context.Background(), hw.PlatformCPU, []string{"fsdp"}, []string{"mistral"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "train: a Kubernetes run of cpu needs 2 settings that are not set: KUBE_IMAGE (")
	assert.Contains(t, err.Error(), "KUBE_OUTPUT_CLAIM (")
	assert.NotContains(t, err.Error(), "KUBE_DATA_CLAIM (")
	assert.Contains(t, err.Error(), "go run mage.go train:run cpu FRAMEWORK MODEL`", "the example is the command that was refused")

	// An image image:push recorded stands in for KUBE_IMAGE.
	dir := w.path("OUTPUT_DIR", "images")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cpu-pushed.json"),
		[]byte(`{"platform":"cpu","repository":"registry.example.com/team/rival-cpu","digest":"sha256:`+strings.Repeat("ab", 32)+`"}`), 0o644))
	w.env = w.env.with(map[string]string{"KUBE_OUTPUT_CLAIM": "rival-output"})
	require.NoError(t, w.checkKubeSettings("train", hw.PlatformCPU))
}

// A KUBE_ setting that names an object the API server would refuse, or that holds a newline, is
// refused where the settings are read, naming it; so is a node selector that names a key twice.
func TestKubeSettingsAreValidatedWhenRead(t *testing.T) {
	base := map[string]string{"GPUS_PER_NODE": "8", "KUBE_IMAGE": "registry.example.com/team/rival-nvd@sha256:" + strings.Repeat("ab", 32),
		"KUBE_DATA_CLAIM": "rival-data", "KUBE_OUTPUT_CLAIM": "rival-output"}
	for _, tc := range []struct{ name, value, want string }{
		{"KUBE_SERVICE_ACCOUNT", "rival\nrunner", `KUBE_SERVICE_ACCOUNT="rival\nrunner"`},
		{"KUBE_PRIORITY_CLASS", "high!", `KUBE_PRIORITY_CLASS="high!"`},
		{"KUBE_NAMESPACE", "ml.team", `KUBE_NAMESPACE="ml.team": must not contain dots`},
		{"KUBE_DATA_CLAIM", "Rival_Data", `KUBE_DATA_CLAIM="Rival_Data"`},
		{"KUBE_CONTEXT", "prod\x1b[2J", `KUBE_CONTEXT="prod\x1b[2J": must not hold control characters`},
		{"KUBE_NODE_SELECTOR", "pool=a100,pool=h100", "names pool twice (pool=a100 and pool=h100)"},
	} {
		w, _ := newWorkspace(t, "")
		env := map[string]string{tc.name: tc.value}
		for k, v := range base {
			if k != tc.name {
				env[k] = v
			}
		}
		w.env = w.env.with(env)
		err := w.KubeManifestTarget(context.Background(), hw.PlatformNVIDIA, "mega", "llama")
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
	// The same settings, well formed, give a manifest that carries them.
	w, _ := newWorkspace(t, "")
	env := map[string]string{"KUBE_SERVICE_ACCOUNT": "rival-runner", "KUBE_PRIORITY_CLASS": "high.priority"}
	for k, v := range base {
		env[k] = v
	}
	w.env = w.env.with(env)
	if os.Getenv("RIVAL_REQUIRE_K8S") != "1" {
		t.Skip("the manifest comes from the rival-kube program, built on first use (about 3 minutes on 2 cores); RIVAL_REQUIRE_K8S=1 (as CI sets it) runs it")
	}
	out, err := captureStdout(t, func() error {
		return w.KubeManifestTarget(context.Background(), hw.PlatformNVIDIA, "mega", "llama")
	})
	require.NoError(t, err)
	assert.Contains(t, out, "serviceAccountName: rival-runner")
	assert.Contains(t, out, "priorityClassName: high.priority")
}
