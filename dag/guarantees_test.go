package dag

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowWriter builds a task with its own key (its input) that writes body to
// out, then lingers, as a long encode does between its last write and its
// return.
func slowWriter(id, in, out string, body []byte, linger time.Duration) *Task {
	return &Task{
		ID:      id,
		Files:   []string{in},
		Outputs: []Output{{Path: out}},
		Run: func(ctx context.Context, x *Exec) error {
			if err := cache.WriteFileAtomic(out, body, 0o644); err != nil {
				return err
			}
			time.Sleep(linger)
			return nil
		},
	}
}

// Two tasks with different keys writing one output path, started together,
// must each record their own output, never the other's.
func TestDifferentKeysOneOutputPathNeverSwapRecords(t *testing.T) {
	f := newFixture(t)
	out := f.path("out/big.txt")
	inA, inB := f.path("a.jsonl"), f.path("b.jsonl")
	require.NoError(t, os.WriteFile(inA, []byte("input A"), 0o644))
	require.NoError(t, os.WriteFile(inB, []byte("input B"), 0o644))
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		for _, c := range []struct{ in, body string }{{inA, "from A"}, {inB, "from B"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &Runner{Cache: f.cache, Out: io.Discard, Root: f.dir}
				assert.NoError(t, r.Run(context.Background(), slowWriter("encode "+filepath.Base(c.in), c.in, out, []byte(c.body), 150*time.Millisecond)))
			}()
			time.Sleep(20 * time.Millisecond)
		}
		wg.Wait()
		// Each key's cache hit must restore its own content.
		for _, c := range []struct{ in, body string }{{inA, "from A"}, {inB, "from B"}} {
			r := &Runner{Cache: f.cache, Out: io.Discard, Root: f.dir}
			require.NoError(t, r.Run(context.Background(), slowWriter("encode "+filepath.Base(c.in), c.in, out, []byte("must not run"), 0)))
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, c.body, string(got), "round %d: the cache hit of %s restores its own output", round, filepath.Base(c.in))
		}
	}
}

// An output changed by someone else between the task's return and its
// store is not recorded under the task's key.
func TestOutputChangedBeforeStoreIsNotRecorded(t *testing.T) {
	f := newFixture(t)
	in, out := f.path("in"), f.path("out")
	require.NoError(t, os.WriteFile(in, []byte("x"), 0o644))
	task := &Task{ID: "t", Files: []string{in}, Outputs: []Output{{Path: out}}, Run: func(ctx context.Context, x *Exec) error {
		return cache.WriteFileAtomic(out, []byte("mine"), 0o644)
	}}
	r := f.runner()
	// The hook runs between the task's return and the store: Stat is what
	// the runner records, so changing the file after the first Stat is the
	// interleaving a concurrent writer produces.
	storeHook = func() { require.NoError(t, os.WriteFile(out, []byte("someone else's, longer"), 0o644)) }
	t.Cleanup(func() { storeHook = nil })
	require.NoError(t, r.Run(context.Background(), task))
	assert.Contains(t, f.log.String(), "changed after the task wrote it; result not cached")
	assert.False(t, (&Runner{Cache: f.cache, Out: io.Discard}).IsCached(&Task{ID: "t", Files: []string{in}, Outputs: []Output{{Path: out}}}))
}

// A restore replaces stale outputs so that a kill part-way never leaves a
// new data file beside an old index and manifest: the stale manifest and
// index are gone before the first new byte lands.
func TestRestoreRemovesStaleManifestBeforeWritingData(t *testing.T) {
	f := newFixture(t)
	in := f.path("in")
	require.NoError(t, os.WriteFile(in, []byte("1"), 0o644))
	bin, idx, man := f.path("d.bin"), f.path("d.idx"), f.path("d.rival.json")
	mk := func(v string) *Task {
		return &Task{ID: "encode", Files: []string{in}, Outputs: []Output{{Path: bin}, {Path: idx}, {Path: man}}, Run: func(ctx context.Context, x *Exec) error {
			for _, p := range []string{bin, idx, man} {
				if err := cache.WriteFileAtomic(p, []byte(v+filepath.Ext(p)), 0o644); err != nil {
					return err
				}
			}
			return nil
		}}
	}
	require.NoError(t, f.runner().Run(context.Background(), mk("one")))
	require.NoError(t, os.WriteFile(in, []byte("2"), 0o644))
	require.NoError(t, f.runner().Run(context.Background(), mk("two")))
	// Back to input 1: a cache hit restores "one". Watch the files as the
	// first output is restored.
	require.NoError(t, os.WriteFile(in, []byte("1"), 0o644))
	var seen []string
	materializeHook = func(path string) {
		_, errI := os.Stat(idx)
		_, errM := os.Stat(man)
		seen = append(seen, filepath.Base(path)+":"+boolStr(errI == nil)+boolStr(errM == nil))
	}
	t.Cleanup(func() { materializeHook = nil })
	r := f.runner()
	require.NoError(t, r.Run(context.Background(), mk("must not run")))
	assert.Equal(t, []string{"d.bin:--", "d.idx:--", "d.rival.json:+-"}, seen, "manifest and index removed before the data is restored, restored last")
	got, _ := os.ReadFile(man)
	assert.Equal(t, "one.json", string(got))
}

func boolStr(b bool) string {
	if b {
		return "+"
	}
	return "-"
}

// deadPID is the id of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// Temporary files a killed writer left beside an output are removed by the
// next run of that output's task; a user's files whose names merely look
// temporary, another output's temporary files and a live writer's are kept.
func TestKillDebrisIsCleanedOnTheNextRun(t *testing.T) {
	f := newFixture(t)
	in := f.path("in")
	require.NoError(t, os.WriteFile(in, []byte("1"), 0o644))
	out := f.path("data/big.bin")
	dir := filepath.Dir(out)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	dead := strconv.Itoa(deadPID(t))
	live := exec.Command("sleep", "30")
	require.NoError(t, live.Start())
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	debris := []string{
		".big.bin" + cache.TempMarker + dead + "~123",
		".big.idx" + cache.TempMarker + dead + "~9",
		".big.docs" + cache.TempMarker + dead + "~4",
	}
	keep := []string{
		// A user's files, named like the old temporary patterns.
		"big.bin.tmpl_notes.txt", "big.docs.tmp_backup", "big.idx.tmp9", ".big.bin.tmp-77",
		// Another output's debris, and a running writer's file.
		".other.bin" + cache.TempMarker + dead + "~1",
		".big.bin" + cache.TempMarker + strconv.Itoa(live.Process.Pid) + "~5",
		// Not the marker's form.
		".big.bin" + cache.TempMarker + "x~5",
	}
	for _, d := range append(append([]string{}, debris...), keep...) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, d), []byte("torn"), 0o644))
	}
	task := &Task{ID: "encode", Files: []string{in}, Outputs: []Output{{Path: out}, {Path: f.path("data/big.idx")}}, Run: func(ctx context.Context, x *Exec) error {
		if err := cache.WriteFileAtomic(out, []byte("b"), 0o644); err != nil {
			return err
		}
		return cache.WriteFileAtomic(f.path("data/big.idx"), []byte("i"), 0o644)
	}}
	require.NoError(t, f.runner().Run(context.Background(), task))
	for _, d := range debris {
		assert.NoFileExists(t, filepath.Join(dir, d))
	}
	for _, k := range keep {
		assert.FileExists(t, filepath.Join(dir, k), "not debris of this task's writers")
	}
}

// Two runs with different keys write one file through two spellings of
// its path: a workspace entered through a symlink, and an output folder
// that is a symlink to a shared one. Each key's record must hold its own
// run's bytes: the output locks name the file as the kernel sees it.
func TestTwoSpellingsOfOneOutputNeverSwapRecords(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, real string) (rootA, rootB string)
	}{
		{"symlinked checkout", func(t *testing.T, real string) (string, string) {
			alias := filepath.Join(t.TempDir(), "alias")
			require.NoError(t, os.Symlink(real, alias))
			return real, alias
		}},
		{"linked output folder", func(t *testing.T, real string) (string, string) {
			other := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(real, "out"), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(real, "out"), filepath.Join(other, "out")))
			return real, other
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rootA, rootB := tc.setup(t, f.dir)
			inA, inB := filepath.Join(rootA, "a.jsonl"), filepath.Join(rootB, "b.jsonl")
			require.NoError(t, os.WriteFile(inA, []byte("input A"), 0o644))
			require.NoError(t, os.WriteFile(inB, []byte("input B"), 0o644))
			type side struct{ root, in, body string }
			sides := []side{{rootA, inA, "from A"}, {rootB, inB, "from B"}}
			for round := 0; round < 3; round++ {
				var wg sync.WaitGroup
				for _, c := range sides {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := &Runner{Cache: f.cache, Out: io.Discard, Root: c.root}
						out := filepath.Join(c.root, "out", "big.txt")
						assert.NoError(t, r.Run(context.Background(), slowWriter("encode "+filepath.Base(c.in), c.in, out, []byte(c.body), 150*time.Millisecond)))
					}()
					time.Sleep(20 * time.Millisecond)
				}
				wg.Wait()
				for _, c := range sides {
					r := &Runner{Cache: f.cache, Out: io.Discard, Root: c.root}
					out := filepath.Join(c.root, "out", "big.txt")
					require.NoError(t, r.Run(context.Background(), slowWriter("encode "+filepath.Base(c.in), c.in, out, []byte("must not run"), 0)))
					got, err := os.ReadFile(out)
					require.NoError(t, err)
					assert.Equal(t, c.body, string(got), "round %d: the cache hit of %s restores its own output", round, filepath.Base(c.in))
				}
			}
		})
	}
}

// A file another run renamed over a task's output after the task published
// it (and before the store) is not recorded under the task's key, even
// when nothing changes it afterwards.
func TestAnotherRunsFileAtTheOutputIsNotRecorded(t *testing.T) {
	f := newFixture(t)
	in, out := f.path("in"), f.path("out")
	require.NoError(t, os.WriteFile(in, []byte("x"), 0o644))
	task := &Task{ID: "t", Files: []string{in}, Outputs: []Output{{Path: out}}, Run: func(ctx context.Context, x *Exec) error {
		if err := cache.WriteFileAtomic(out, []byte("mine"), 0o644); err != nil {
			return err
		}
		// Another process renames its own file over ours before we return.
		other := f.path("other")
		require.NoError(t, os.WriteFile(other, []byte("theirs"), 0o644))
		return os.Rename(other, out)
	}}
	require.NoError(t, f.runner().Run(context.Background(), task))
	assert.Contains(t, f.log.String(), "changed after the task wrote it; result not cached")
	assert.False(t, (&Runner{Cache: f.cache, Out: io.Discard}).IsCached(&Task{ID: "t", Files: []string{in}, Outputs: []Output{{Path: out}}}))
}
