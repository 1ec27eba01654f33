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
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// hostScripted is the scripted trainer as the host executor: its runs have
// the keys the demo's own runs on this host have, so the demo finds them
// cached and needs no PyTorch.
type hostScripted struct{ *scriptedExecutor }

func (hostScripted) Kind() executor.Kind { return executor.KindHost }

// The demo's runs take the training lock in whatever order the runner's
// workers reach it, so its task lines come in no fixed order: after them
// the demo lists the runs in plan order and says why the lines differ.
func TestDemoListsItsRunsInPlanOrder(t *testing.T) {
	w, log := newWorkspace(t, "")
	sample := filepath.Join(w.root, "testdata", "sample", "corpus.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(sample), 0o755))
	copyFile(t, filepath.Join("..", "testdata", "sample", "corpus.jsonl"), sample)
	bundled := filepath.Join(w.root, "tokenizer", "testdata", "mistral-7b-v0.1", "tokenizer.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(bundled), 0o755))
	copyFile(t, mistralTok, bundled)
	w.markOwnDirs()

	// Train every run of the demo's plan first, as the demo would build it.
	ctx := context.Background()
	ft := w.data().FilterTask(sample, w.path("DATA_DIR", "demo", "sample-filtered.jsonl"), nil)
	tok, err := w.data().ResolveTokenizer("mistral")
	require.NoError(t, err)
	et := w.data().EncodeTask(w.path("DATA_DIR", "demo", "sample-filtered.jsonl"), tok, w.demoPrefix(), w.config.float("TRAIN_SPLIT"), ft)
	require.NoError(t, w.runner.Run(ctx, et))
	planned, err := w.demoRuns()
	require.NoError(t, err)
	ex := hostScripted{&scriptedExecutor{steps: 16}}
	var want []string
	for _, r := range planned {
		for i := range demoRepeats {
			tt, err := w.trainTask(trainInputs{Run: training.Run{
				Platform: r.Platform, Framework: r.Framework, Model: r.Model, Dataset: r.Dataset, Variant: r.Variant, RunIndex: i,
				TrainPrefix: r.TrainPrefix, Tokenizer: tok, Encode: et, Host: hw.Host{Platform: hw.PlatformCPU}, Executor: ex,
			}, Config: r.Config})
			require.NoError(t, err)
			require.NoError(t, w.runner.Run(ctx, tt))
			want = append(want, tt.ID+": ")
		}
	}
	require.EqualValues(t, 2*demoRepeats, ex.runs.Load())

	log.Reset()
	require.NoError(t, w.Demo(ctx))
	out := log.String()
	require.EqualValues(t, 2*demoRepeats, ex.runs.Load(), "every run was cached: %s", out)
	_, list, ok := strings.Cut(out, "6 runs in plan order (the lines above follow the order in which the runs took the host-wide training lock")
	require.True(t, ok, "the list and why its order differs: %s", out)
	var got []string
	for _, line := range strings.Split(list, "\n")[1:] {
		if id, _, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(line, "train ") && strings.HasSuffix(line, "(cached)") {
			got = append(got, id+": ")
		}
	}
	assert.Equal(t, want, got)
}
