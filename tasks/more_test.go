package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
)

func TestMissingInputFileIsNamed(t *testing.T) {
	f := newFixture(t)
	missing := f.path("gone.jsonl")
	task := &Task{ID: "filter gone", Files: []string{missing}, Run: func(context.Context, *Exec) error { return nil }}
	err := f.runner().Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gone.jsonl")
	assert.Contains(t, err.Error(), "no such file")
}

func TestUnreadableInputIsAnError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	f := newFixture(t)
	p := f.path("secret.jsonl")
	require.NoError(t, os.WriteFile(p, []byte("{}"), 0o000))
	task := &Task{ID: "filter secret", Files: []string{p}, Run: func(context.Context, *Exec) error { return nil }}
	err := f.runner().Run(context.Background(), task)
	require.ErrorContains(t, err, "permission denied")
}

// trainOnce runs a scripted training and returns its result file.
func trainOnce(t *testing.T, w *Workspace) string {
	t.Helper()
	task, err := w.TrainTask(trainInputs(t, w, &scriptedExecutor{steps: 6}))
	require.NoError(t, err)
	require.NoError(t, w.Runner.Run(context.Background(), task))
	return task.Outputs[0].Path
}

func TestCompareIsCachedWhenNoResultChanged(t *testing.T) {
	w, _ := newWorkspace(t, "")
	trainOnce(t, w)
	ct, err := w.CompareTask(nil)
	require.NoError(t, err)
	require.NoError(t, w.Runner.Run(context.Background(), ct))
	for _, o := range ct.Outputs {
		assert.FileExists(t, o.Path)
	}
	report, err := os.ReadFile(ct.Outputs[0].Path)
	require.NoError(t, err)
	assert.Contains(t, string(report), "mistral-proxy")

	r2 := &Runner{Cache: w.Cache, Root: w.Root, Out: w.Out}
	ct2, err := w.CompareTask(nil)
	require.NoError(t, err)
	require.NoError(t, r2.Run(context.Background(), ct2))
	assert.Equal(t, "tasks: 0 run, 1 cached", r2.Summary())
}

func TestCompareWithNoResultsFails(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ct, err := w.CompareTask(nil)
	require.NoError(t, err)
	err = w.Runner.Run(context.Background(), ct)
	require.Error(t, err)
}

func TestVerifyResultsComparesInputs(t *testing.T) {
	w, _ := newWorkspace(t, "")
	a := trainOnce(t, w)
	var out bytes.Buffer
	require.NoError(t, w.VerifyResults([]string{a, a}, &out))
	assert.Contains(t, out.String(), "identical inputs apart from the hardware")

	// B trained on other data: a different dataset fingerprint.
	var r map[string]any
	data, err := os.ReadFile(a)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &r))
	r["dataset"].(map[string]any)["fingerprint"] = strings.Repeat("0", 64)
	b := filepath.Join(t.TempDir(), "b.json")
	data, err = json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b, data, 0o644))
	out.Reset()
	err = w.VerifyResults([]string{a, b}, &out)
	require.Error(t, err)
	assert.Contains(t, out.String(), "DIFFERS")
}

// TestLogOnFullDiskFailsTheRun puts OUTPUT_DIR on a tiny tmpfs: saving the
// log fails with a clear error and nothing is cached.
func TestLogOnFullDiskFailsTheRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tiny tmpfs needs root")
	}
	w, _ := newWorkspace(t, "")
	out := filepath.Join(w.Root, "small")
	require.NoError(t, os.MkdirAll(out, 0o755))
	if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", out).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v %s", err, b)
	}
	t.Cleanup(func() { exec.Command("umount", out).Run() })
	cfgPath := filepath.Join(w.Root, "config.env")
	require.NoError(t, os.WriteFile(cfgPath, []byte("OUTPUT_DIR="+out+"\n"), 0o644))
	w2, _ := newWorkspaceAt(t, w.Root)
	task, err := w2.TrainTask(trainInputs(t, w2, &scriptedExecutor{steps: 2000}))
	require.NoError(t, err)
	err = w2.Runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no space left on device")
	assert.NoFileExists(t, task.Outputs[0].Path)
}

func TestTrainAllSkipsRefusedCombinations(t *testing.T) {
	w, log := newWorkspace(t, "")
	host := hw.Host{Platform: hw.PlatformNVIDIA}
	for i := 0; i < 8; i++ {
		host.GPUs = append(host.GPUs, hw.GPU{Index: i, Model: "H100 SXM", Name: "NVIDIA H100 80GB HBM3"})
	}
	ex := &scriptedExecutor{}
	plan, err := w.PlanTraining(hw.PlatformNVIDIA, []string{"titan", "mega"}, []string{"qwen", "llama"}, host, ex, true)
	require.NoError(t, err)
	assert.Len(t, plan.Runs, 3, "titan × qwen is left out")
	assert.Contains(t, log.String(), "skipping titan × qwen on nvd")

	_, err = w.PlanTraining(hw.PlatformNVIDIA, []string{"titan"}, []string{"qwen"}, host, ex, false)
	require.Error(t, err, "train:run asks for exactly that combination: an error")
}
