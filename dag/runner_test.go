package dag

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
)

type fixture struct {
	dir   string
	cache *cache.Cache
	log   *bytes.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	return &fixture{dir: t.TempDir(), cache: c, log: &bytes.Buffer{}}
}

func (f *fixture) runner() *Runner {
	return &Runner{Cache: f.cache, Verbose: true, Out: f.log, Jobs: 2}
}

func (f *fixture) path(name string) string { return filepath.Join(f.dir, name) }

// copyTask builds "upper IN -> OUT": OUT is IN upper-cased.
func copyTask(f *fixture, in, out string, runs *atomic.Int64, params map[string]string) *Task {
	return &Task{
		ID:      "upper " + filepath.Base(in),
		Files:   []string{in},
		Params:  params,
		Outputs: []Output{{Path: out, Compress: true}},
		Run: func(ctx context.Context, x *Exec) error {
			runs.Add(1)
			b, err := os.ReadFile(in)
			if err != nil {
				return err
			}
			return cache.WriteFileAtomic(out, bytes.ToUpper(b), 0o644)
		},
	}
}

func concatTask(f *fixture, deps []*Task, out string, runs *atomic.Int64) *Task {
	return &Task{
		ID:      "concat",
		Deps:    deps,
		Outputs: []Output{{Path: out}},
		Run: func(ctx context.Context, x *Exec) error {
			runs.Add(1)
			var all []byte
			for _, d := range deps {
				b, err := os.ReadFile(d.Outputs[0].Path)
				if err != nil {
					return err
				}
				all = append(all, b...)
			}
			x.SetMeta(map[string]int{"bytes": len(all)})
			return cache.WriteFileAtomic(out, all, 0o644)
		},
	}
}

func buildDAG(f *fixture, runs *atomic.Int64, params map[string]string) *Task {
	a := copyTask(f, f.path("a.txt"), f.path("A.txt"), runs, params)
	b := copyTask(f, f.path("b.txt"), f.path("B.txt"), runs, nil)
	return concatTask(f, []*Task{a, b}, f.path("AB.txt"), runs)
}

func TestSecondRunIsAllCacheHits(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(f.path("a.txt"), []byte("alpha "), 0o644))
	require.NoError(t, os.WriteFile(f.path("b.txt"), []byte("beta"), 0o644))
	var runs atomic.Int64

	r1 := f.runner()
	require.NoError(t, r1.Run(context.Background(), buildDAG(f, &runs, nil)))
	assert.Equal(t, "tasks: 3 run, 0 cached", r1.Summary())
	got, _ := os.ReadFile(f.path("AB.txt"))
	assert.Equal(t, "ALPHA BETA", string(got))

	reads := f.cache.FileReads()
	r2 := f.runner()
	top := buildDAG(f, &runs, nil)
	require.NoError(t, r2.Run(context.Background(), top))
	assert.Equal(t, "tasks: 0 run, 3 cached", r2.Summary())
	assert.EqualValues(t, 3, runs.Load())
	assert.Equal(t, reads, f.cache.FileReads(), "a no-op run reads no file")
	var meta map[string]int
	require.NoError(t, top.Meta(&meta))
	assert.Equal(t, 10, meta["bytes"])
	assert.True(t, top.Cached())
}

func TestChangedInputIsExplained(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(f.path("a.txt"), []byte("alpha "), 0o644))
	require.NoError(t, os.WriteFile(f.path("b.txt"), []byte("beta"), 0o644))
	var runs atomic.Int64
	require.NoError(t, f.runner().Run(context.Background(), buildDAG(f, &runs, nil)))
	oldA, _, _ := f.cache.FileDigest(f.path("a.txt"))

	require.NoError(t, os.WriteFile(f.path("a.txt"), []byte("gamma "), 0o644))
	newA, _, _ := f.cache.FileDigest(f.path("a.txt"))
	f.log.Reset()
	r := f.runner()
	require.NoError(t, r.Run(context.Background(), buildDAG(f, &runs, nil)))
	assert.Equal(t, "tasks: 2 run, 1 cached", r.Summary())
	out := f.log.String()
	assert.Contains(t, out, "a.txt: "+oldA.Short()+" → "+newA.Short())
	assert.Contains(t, out, "cached upper b.txt")
	assert.Contains(t, out, "upstream upper a.txt")

	f.log.Reset()
	r = f.runner()
	require.NoError(t, r.Run(context.Background(), buildDAG(f, &runs, map[string]string{"SL": "4096"})))
	assert.Contains(t, f.log.String(), "new parameter SL=4096")
}

func TestDeletedOutputsAreMaterializedNotRebuilt(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(f.path("a.txt"), []byte("alpha "), 0o644))
	require.NoError(t, os.WriteFile(f.path("b.txt"), []byte("beta"), 0o644))
	var runs atomic.Int64
	require.NoError(t, f.runner().Run(context.Background(), buildDAG(f, &runs, nil)))
	for _, p := range []string{"A.txt", "B.txt", "AB.txt"} {
		require.NoError(t, os.Remove(f.path(p)))
	}
	r := f.runner()
	require.NoError(t, r.Run(context.Background(), buildDAG(f, &runs, nil)))
	assert.Equal(t, "tasks: 0 run, 3 cached", r.Summary())
	got, err := os.ReadFile(f.path("AB.txt"))
	require.NoError(t, err)
	assert.Equal(t, "ALPHA BETA", string(got))
}

func TestFailedTaskIsNotRecorded(t *testing.T) {
	f := newFixture(t)
	fail := true
	mk := func() *Task {
		return &Task{ID: "flaky", Outputs: []Output{{Path: f.path("out")}}, Run: func(ctx context.Context, x *Exec) error {
			if fail {
				return errors.New("boom")
			}
			return cache.WriteFileAtomic(f.path("out"), []byte("ok"), 0o644)
		}}
	}
	err := f.runner().Run(context.Background(), mk())
	require.ErrorContains(t, err, "flaky: boom")
	fail = false
	r := f.runner()
	require.NoError(t, r.Run(context.Background(), mk()))
	assert.Equal(t, "tasks: 1 run, 0 cached", r.Summary())
}

func TestMissingOutputIsAnError(t *testing.T) {
	f := newFixture(t)
	task := &Task{ID: "lazy", Outputs: []Output{{Path: f.path("never")}}, Run: func(context.Context, *Exec) error { return nil }}
	err := f.runner().Run(context.Background(), task)
	require.ErrorContains(t, err, "lazy: output")
}

func TestInputChangedDuringRunIsNotRecorded(t *testing.T) {
	f := newFixture(t)
	in := f.path("in")
	require.NoError(t, os.WriteFile(in, []byte("v1"), 0o644))
	mk := func(mutate bool) *Task {
		return &Task{ID: "t", Files: []string{in}, Outputs: []Output{{Path: f.path("out")}}, Run: func(context.Context, *Exec) error {
			if mutate {
				os.WriteFile(in, []byte("v2"), 0o644)
			}
			return cache.WriteFileAtomic(f.path("out"), []byte("x"), 0o644)
		}}
	}
	require.NoError(t, f.runner().Run(context.Background(), mk(true)))
	assert.Contains(t, f.log.String(), "inputs changed while it ran; result not cached")
	r := f.runner()
	require.NoError(t, r.Run(context.Background(), mk(false)))
	assert.Equal(t, "tasks: 1 run, 0 cached", r.Summary())
}

func TestSecretsNeverInKeys(t *testing.T) {
	f := newFixture(t)
	task := &Task{ID: "fetch", Env: []string{"HF_TOKEN"}, Run: func(context.Context, *Exec) error { return nil }}
	err := f.runner().Run(context.Background(), task)
	require.ErrorContains(t, err, "HF_TOKEN is a secret")
}

func TestExclusiveTasksNeverOverlap(t *testing.T) {
	f := newFixture(t)
	var active, peak atomic.Int64
	var tasks []*Task
	for i := 0; i < 4; i++ {
		out := f.path("ex" + string(rune('0'+i)))
		tasks = append(tasks, &Task{ID: "train " + out, Exclusive: true, Outputs: []Output{{Path: out}}, Run: func(context.Context, *Exec) error {
			n := active.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			active.Add(-1)
			return cache.WriteFileAtomic(out, []byte("r"), 0o644)
		}})
	}
	r := &Runner{Cache: f.cache, Out: f.log, Jobs: 4}
	require.NoError(t, r.Run(context.Background(), tasks...))
	assert.EqualValues(t, 1, peak.Load())
}

func TestIndependentTasksRunInParallel(t *testing.T) {
	f := newFixture(t)
	var active, peak atomic.Int64
	release := make(chan struct{})
	var tasks []*Task
	for i := 0; i < 2; i++ {
		out := f.path("p" + string(rune('0'+i)))
		tasks = append(tasks, &Task{ID: "par " + out, Outputs: []Output{{Path: out}}, Run: func(context.Context, *Exec) error {
			if active.Add(1) == 2 {
				peak.Store(2)
				close(release)
			}
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
			return cache.WriteFileAtomic(out, []byte("r"), 0o644)
		}})
	}
	r := &Runner{Cache: f.cache, Out: f.log, Jobs: 2}
	require.NoError(t, r.Run(context.Background(), tasks...))
	assert.EqualValues(t, 2, peak.Load(), "two independent tasks overlapped")
}

func TestCycleIsAnError(t *testing.T) {
	f := newFixture(t)
	a := &Task{ID: "a"}
	b := &Task{ID: "b", Deps: []*Task{a}}
	a.Deps = []*Task{b}
	err := f.runner().Run(context.Background(), a)
	require.ErrorContains(t, err, "task cycle")
}

func TestDiffInputs(t *testing.T) {
	tests := []struct {
		name      string
		prev, now []cache.KeyPart
		want      string
	}{
		{"param changed", []cache.KeyPart{{Kind: "param", Name: "SL", Value: "2048"}}, []cache.KeyPart{{Kind: "param", Name: "SL", Value: "4096"}}, "SL: 2048 → 4096"},
		{"new param", nil, []cache.KeyPart{{Kind: "param", Name: "SL", Value: "4096"}}, "new parameter SL=4096"},
		{"file", []cache.KeyPart{{Kind: "file", Name: "x/tokenizer.json", Value: "3f2a99" + strings.Repeat("0", 58)}},
			[]cache.KeyPart{{Kind: "file", Name: "x/tokenizer.json", Value: "9c1d00" + strings.Repeat("7", 58)}},
			"tokenizer.json: 3f2a990000000000 → 9c1d007777777777"},
		{"not a digest", []cache.KeyPart{{Kind: "dep", Name: "t: out", Value: "3f2a99"}}, []cache.KeyPart{{Kind: "dep", Name: "t: out", Value: "9c1d00"}}, "upstream t: out: 3f2a99 → 9c1d00"},
		{"removed", []cache.KeyPart{{Kind: "env", Name: "HF_ENDPOINT", Value: "x"}}, nil, "env HF_ENDPOINT removed"},
		{"same", []cache.KeyPart{{Kind: "param", Name: "a", Value: "1"}}, []cache.KeyPart{{Kind: "param", Name: "a", Value: "1"}}, "inputs unchanged, but no usable cached result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, diffInputs(tt.prev, tt.now))
		})
	}
}

// noopDAG builds one hashing task per input file plus a task that depends
// on all of them.
func noopDAG(files []string, outDir string) *Task {
	var deps []*Task
	for _, in := range files {
		out := filepath.Join(outDir, filepath.Base(in)+".sum")
		deps = append(deps, &Task{ID: "sum " + filepath.Base(in), Files: []string{in}, Outputs: []Output{{Path: out}},
			Run: func(context.Context, *Exec) error {
				d, _, err := cache.HashFile(in)
				if err != nil {
					return err
				}
				return cache.WriteFileAtomic(out, []byte(d.String()), 0o644)
			}})
	}
	all := filepath.Join(outDir, "all")
	return &Task{ID: "all", Deps: deps, Outputs: []Output{{Path: all}}, Run: func(context.Context, *Exec) error {
		var b strings.Builder
		for _, d := range deps {
			s, err := os.ReadFile(d.Outputs[0].Path)
			if err != nil {
				return err
			}
			b.Write(s)
		}
		return cache.WriteFileAtomic(all, []byte(b.String()), 0o644)
	}}
}

// sparseFiles makes n files of size bytes each without using disk space.
func sparseFiles(tb testing.TB, dir string, n int, size int64) []string {
	var files []string
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, "shard"+string(rune('a'+i))+".bin")
		f, err := os.Create(p)
		require.NoError(tb, err)
		require.NoError(tb, f.Truncate(size))
		require.NoError(tb, f.Close())
		files = append(files, p)
	}
	return files
}

func TestNoOpRunReadsNothing(t *testing.T) {
	f := newFixture(t)
	files := sparseFiles(t, f.dir, 4, 16<<20)
	require.NoError(t, f.runner().Run(context.Background(), noopDAG(files, f.path("out"))))
	before := f.cache.FileReads()
	r := f.runner()
	require.NoError(t, r.Run(context.Background(), noopDAG(files, f.path("out"))))
	assert.Equal(t, "tasks: 0 run, 5 cached", r.Summary())
	assert.Equal(t, before, f.cache.FileReads())
}

// BenchmarkNoOpRun: a DAG over 1 GiB of inputs (4 sparse 256 MiB files),
// already cached; each iteration is a full no-op run. It must cost stat
// calls, not reads: the reported reads/op stays 0.
func BenchmarkNoOpRun(b *testing.B) {
	dir := b.TempDir()
	c, err := cache.Open(filepath.Join(dir, "cache"))
	require.NoError(b, err)
	files := sparseFiles(b, dir, 4, 256<<20)
	out := filepath.Join(dir, "out")
	require.NoError(b, (&Runner{Cache: c, Out: &bytes.Buffer{}}).Run(context.Background(), noopDAG(files, out)))
	before := c.FileReads()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := &Runner{Cache: c, Out: &bytes.Buffer{}}
		if err := r.Run(context.Background(), noopDAG(files, out)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.FileReads()-before)/float64(b.N), "reads/op")
}

// With -v, a changed input whose before and after share their shown
// prefix (two digests alike in their first cache.ShortLen digits, two long
// parameters alike in their first 37 characters) is shown long enough to
// tell them apart.
func TestVerboseReasonTellsAlikeValuesApart(t *testing.T) {
	f := newFixture(t)
	in, out := f.path("tokenizer.json"), f.path("out.txt")
	long := "/data/datasets/bookcorpus-llama-3.1-8b/train-split-"
	var runs atomic.Int64
	require.NoError(t, os.WriteFile(in, []byte("a"), 0o644))
	require.NoError(t, f.runner().Run(context.Background(), copyTask(f, in, out, &runs, map[string]string{"prefix": long + "0001"})))

	// The last run's inputs as they would be had the file held content whose
	// digest shares its first ShortLen digits with the new one.
	require.NoError(t, os.WriteFile(in, []byte("b"), 0o644))
	now, _, err := f.cache.TreeDigest(in)
	require.NoError(t, err)
	prev, ok := f.cache.LastInputs("upper tokenizer.json")
	require.True(t, ok)
	alike := []byte(now.String())
	k := cache.ShortLen + 2
	alike[k] = '0'
	if now.String()[k] == '0' {
		alike[k] = '1'
	}
	for i := range prev {
		if prev[i].Kind == "file" {
			prev[i].Value = string(alike)
		}
	}
	require.NoError(t, f.cache.PutRecord(cache.Record{Key: cache.HashBytes([]byte("an earlier run")), Task: "upper tokenizer.json", Inputs: prev}))

	f.log.Reset()
	require.NoError(t, f.runner().Run(context.Background(), copyTask(f, in, out, &runs, map[string]string{"prefix": long + "0002"})))
	line := f.log.String()
	assert.Contains(t, line, "tokenizer.json: "+string(alike[:k+4])+" → "+now.String()[:k+4])
	assert.Contains(t, line, "prefix: "+long+"0001 → "+long+"0002")
}
