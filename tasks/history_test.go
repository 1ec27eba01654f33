package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// copyResults copies a crafted history from compare's testdata into the
// workspace's OUTPUT_DIR.
func copyResults(t *testing.T, w *Workspace, set string) {
	t.Helper()
	src := filepath.Join("..", "compare", "testdata", "history", set)
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	out := w.path("OUTPUT_DIR")
	require.NoError(t, os.MkdirAll(out, 0o755))
	for _, e := range entries {
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(out, e.Name()))
	}
}

// compare:history through the task: the verdict printed, the three files
// written, a cache hit the second time, and HISTORY_THRESHOLD in the key.
func TestCompareHistoryTarget(t *testing.T) {
	tests := []struct {
		set, config, want string
	}{
		{"regression", "", "regression: 9.7% slower"},
		{"date-only", "", "change outside the recorded stack"},
		{"noise", "", "1 → 2 [stack]: 1.013× (95% CI 0.993–1.033), no change"},
		{"noise", "HISTORY_THRESHOLD=1%\n", "inconclusive"},
		{"anchor", "", "no workload ran on more than one software stack, host or date"},
	}
	for _, tc := range tests {
		t.Run(tc.set+" "+tc.config, func(t *testing.T) {
			w, log := newWorkspace(t, tc.config)
			copyResults(t, w, tc.set)
			require.NoError(t, w.HistoryTarget(context.Background(), nil))
			assert.Contains(t, log.String(), tc.want)
			for _, f := range []string{"history.md", "history.png", "history.svg"} {
				assert.FileExists(t, filepath.Join(w.path("OUTPUT_DIR"), f))
			}
			r2 := &dag.Runner{Cache: w.cache, Root: w.root, Out: &bytes.Buffer{}}
			w.runner = r2
			require.NoError(t, w.HistoryTarget(context.Background(), nil))
			ran, _ := r2.Counts()
			assert.Equal(t, 0, ran, "unchanged results and threshold: a cache hit")
		})
	}
}

func TestCompareHistoryRefusesABadThreshold(t *testing.T) {
	w, _ := newWorkspace(t, "HISTORY_THRESHOLD=five\n")
	copyResults(t, w, "regression")
	err := w.HistoryTarget(context.Background(), nil)
	require.ErrorContains(t, err, `config HISTORY_THRESHOLD="five": not a number; give a percentage such as 5%`)
	err = w.CompareTarget(context.Background(), nil)
	require.ErrorContains(t, err, "HISTORY_THRESHOLD")
}

// The report of compare carries the History section with the configured
// threshold.
func TestCompareReportHasHistory(t *testing.T) {
	w, _ := newWorkspace(t, "HISTORY_THRESHOLD=2%\n")
	copyResults(t, w, "mixed-hosts")
	require.NoError(t, w.CompareTarget(context.Background(), nil))
	md, err := os.ReadFile(filepath.Join(w.path("OUTPUT_DIR"), "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "## History")
	assert.Contains(t, string(md), "Threshold θ = 2.0%")
}

// The torch base images the container tests build (make-torch-base.sh):
// Debian 12's torch 1.13 takes the trainer's DDP path with two processes,
// Debian 13's torch 2.6 its FSDP2 path.
var historyStacks = []struct{ image, suite string }{
	{"rival-test/torch-base:bookworm", "bookworm"},
	{"rival-test/torch-base:trixie", "trixie"},
}

// oracleHistory runs compare/testdata/history/oracle.py (numpy) on results.
func oracleHistory(t *testing.T, dir string) []map[string]any {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	cmd := exec.Command(py, filepath.Join("..", "compare", "testdata", "history", "oracle.py"), dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "oracle.py needs python3 with numpy: %s", stderr.String())
	var h []map[string]any
	require.NoError(t, json.Unmarshal(out, &h))
	return h
}

// The demo's workload (the Mistral proxy on the sample corpus, two
// data-parallel processes, GBS 4 × SL 128, 16 steps) trained three times in
// each of the two torch stacks, compared by compare:history: the ratio,
// interval and verdict it prints are those oracle.py computes from the
// result files. Six real training runs (minutes, more on a busy host): it
// runs with RIVAL_TEST_TORCH_IMAGE=1 (CI sets it), and then Docker and both
// images must be there.
func TestHistoryOfTwoTorchStacks(t *testing.T) {
	if os.Getenv("RIVAL_TEST_TORCH_IMAGE") != "1" {
		t.Skip("trains six runs in Docker: RIVAL_TEST_TORCH_IMAGE=1 go test ./tasks -run TestHistoryOfTwoTorchStacks (after sudo bash container/testdata/make-torch-base.sh and sudo SUITE=trixie bash container/testdata/make-torch-base.sh)")
	}
	stop := t.Fatalf
	ctx := context.Background()
	e, err := container.Connect(ctx)
	if err != nil {
		stop("no Docker daemon: %v (start dockerd, then build the images with sudo bash container/testdata/make-torch-base.sh and SUITE=trixie)", err)
		return
	}
	defer e.Close()
	for _, s := range historyStacks {
		if _, err := e.ImageID(ctx, s.image); err != nil {
			stop("image %s is missing: build it with sudo SUITE=%s bash container/testdata/make-torch-base.sh (%v)", s.image, s.suite, err)
			return
		}
	}
	withCPUFlags(t, "no-bf16.txt")
	w, log := newWorkspace(t, "")
	useRepoDockerfiles(t, w)
	require.NoError(t, os.MkdirAll(filepath.Join(w.root, "testdata", "sample"), 0o755))
	copyFile(t, filepath.Join("..", "testdata", "sample", "corpus.jsonl"), filepath.Join(w.root, "testdata", "sample", "corpus.jsonl"))

	// The demo's dataset: filter and encode the sample with Mistral's tokenizer.
	filtered := w.path("DATA_DIR", "demo", "sample-filtered.jsonl")
	ft := w.data().FilterTask(filepath.Join(w.root, "testdata", "sample", "corpus.jsonl"), filtered, nil)
	tok, err := w.data().ResolveTokenizer(mistralTok) // the tokenizer the demo bundles
	require.NoError(t, err)
	tok.EOD = 2
	et := w.data().EncodeTask(filtered, tok, w.demoPrefix(), w.config.float("TRAIN_SPLIT"), ft)
	require.NoError(t, w.runner.Run(ctx, et))
	planned, err := w.demoRuns()
	require.NoError(t, err)
	var dp2 plannedRun
	for _, r := range planned {
		if r.Variant == "dp2" {
			dp2 = r
		}
	}
	require.Equal(t, "dp2", dp2.Variant)

	for _, s := range historyStacks {
		setting(w, "IMAGE_BASE", s.image)
		rec, _, err := w.images().Ensure(ctx, e, hw.PlatformCPU)
		require.NoError(t, err)
		ex := &executor.Docker{Engine: e, ImageID: rec.ImageID, Platform: hw.PlatformCPU}
		for i := range demoRepeats {
			tt, err := w.trainTask(trainInputs{Run: training.Run{
				Platform: dp2.Platform, Framework: dp2.Framework, Model: dp2.Model, Dataset: dp2.Dataset, Variant: dp2.Variant, RunIndex: i,
				TrainPrefix: dp2.TrainPrefix, Tokenizer: tok, Encode: et, Host: hw.Host{Platform: hw.PlatformCPU}, Executor: ex,
			}, Config: dp2.Config})
			require.NoError(t, err)
			require.NoError(t, w.runner.Run(ctx, tt), "train %s run %d in %s", dp2.Variant, i, s.image)
		}
	}

	log.Reset()
	require.NoError(t, w.HistoryTarget(ctx, nil))
	printed := log.String()
	t.Log(printed)

	// Every result the history read, as files, for the oracle: the first
	// output of each train record in the cache.
	recs, err := w.cache.Records()
	require.NoError(t, err)
	var blobs [][]byte
	for _, r := range recs {
		if strings.HasPrefix(r.Task, "train ") && len(r.Outputs) > 0 {
			b, err := w.cache.ReadBlob(r.Outputs[0].Digest)
			require.NoError(t, err)
			blobs = append(blobs, b)
		}
	}
	require.Len(t, blobs, 2*demoRepeats)
	dir := t.TempDir()
	for i, b := range blobs {
		require.NoError(t, cache.WriteFileAtomic(filepath.Join(dir, fmt.Sprintf("result_%d.json", i)), b, 0o644))
	}
	want := oracleHistory(t, dir)
	require.Len(t, want, 1, "one workload in two batches")
	steps := want[0]["steps"].([]any)
	require.Len(t, steps, 1)
	ws := steps[0].(map[string]any)
	assert.Equal(t, "stack", ws["kind"])

	inputs, _ := compare.LoadFiles(context.Background(), nil, blobs)
	rep, err := compare.Analyze(inputs, compare.DefaultPrices())
	require.NoError(t, err)
	require.NotNil(t, rep.History)
	require.Len(t, rep.History.Series, 1)
	series := rep.History.Series[0]
	require.Len(t, series.Batches, 2)
	assert.Contains(t, series.Batches[0].Stack.FrameworkVersion, "ran ddp on torch 1.13")
	assert.Contains(t, series.Batches[1].Stack.FrameworkVersion, "ran fsdp2 on torch 2.6.0")
	st := series.Steps[0]
	assert.Equal(t, compare.StepStack, st.Kind, "one host, two images: a stack step")
	assert.Contains(t, strings.Join(st.Changed, "; "), "torch 1.13")
	assert.Equal(t, ws["verdict"], st.Verdict)
	rel := func(want any, got float64, what string) {
		w := want.(float64)
		assert.InDelta(t, 0, math.Abs(got-w)/math.Abs(w), 5e-4, "%s: oracle %v, compare %v", what, w, got)
	}
	rel(ws["ratio"], st.Ratio.Value, "ratio")
	require.Equal(t, ws["has_ci"], st.Ratio.HasCI)
	if st.Ratio.HasCI {
		rel(ws["lo"], st.Ratio.Lo, "interval low")
		rel(ws["hi"], st.Ratio.Hi, "interval high")
	}
	// What compare:history printed is that step.
	assert.Contains(t, printed, fmt.Sprintf("1 → 2 [stack]: %.3f×", st.Ratio.Value))
	assert.Contains(t, printed, st.Phrase())
	if st.Ratio.HasCI {
		assert.Contains(t, printed, fmt.Sprintf("95%% CI %.3f–%.3f", st.Ratio.Lo, st.Ratio.Hi))
	}
}
