package tasks

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The concurrency suite runs the real target binary (mage's compiled
// magefile), several processes side by side, and compares every dataset
// byte for byte with the one a serial run in a fresh cache wrote. It is
// bounded: every process has a deadline, and the kill rounds are counted.
// RIVAL_CONCURRENCY_KILLS sets the kills per phase (default 4).

var rivalBin = struct {
	once sync.Once
	path string
	err  error
}{}

// rivalBinary compiles the magefile once per test binary.
func rivalBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the concurrency suite compiles and runs the target binary; skipped in -short")
	}
	rivalBin.once.Do(func() {
		if p := os.Getenv("RIVAL_TEST_BIN"); p != "" {
			rivalBin.path = p // another build of the targets, to compare
			return
		}
		dir, err := os.MkdirTemp("", "rival-bin-")
		if err != nil {
			rivalBin.err = err
			return
		}
		rivalBin.path = filepath.Join(dir, "rival")
		cmd := exec.Command("go", "run", "mage.go", "-compile", rivalBin.path)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			rivalBin.err = fmt.Errorf("compile the targets: %v\n%s", err, out)
		}
	})
	require.NoError(t, rivalBin.err)
	return rivalBin.path
}

// suiteCorpus writes name in dir: the sample corpus repeated n times, each
// copy's documents marked with variant and the copy number, so two
// variants are different inputs.
func suiteCorpus(t *testing.T, dir, name, variant string, n int) string {
	t.Helper()
	src, err := os.ReadFile("../testdata/sample/corpus.jsonl")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(src)), "\n")
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		for _, l := range lines {
			fmt.Fprintf(&b, "%s,\"variant\":\"%s %d\"}\n", strings.TrimSuffix(l, "}"), variant, i)
		}
	}
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
	return p
}

type suiteWS struct {
	root, cache string
	env         []string // extra KEY=VALUE settings
}

func newSuiteWS(t *testing.T, cacheDir string) suiteWS {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), nil, 0o644))
	return suiteWS{root: root, cache: cacheDir}
}

var suiteTokenizer, _ = filepath.Abs("../tokenizer/testdata/mistral-7b-v0.1/tokenizer.json")

// target starts bin with args in ws.
func (ws suiteWS) target(ctx context.Context, bin string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = ws.root
	cmd.Env = append(append(os.Environ(), "RIVAL_CACHE="+ws.cache, "RIVAL_CONFIG="), ws.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

func (ws suiteWS) run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, out := ws.target(ctx, bin, args...)
	require.NoError(t, cmd.Run(), "%s: %s", strings.Join(args, " "), out)
	return out.String()
}

// dataset reads the three files of prefix (relative to ws.root).
func (ws suiteWS) dataset(t *testing.T, prefix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, ext := range []string{".bin", ".idx", ".rival.json"} {
		b, err := os.ReadFile(filepath.Join(ws.root, prefix+ext))
		require.NoError(t, err, "%s%s", prefix, ext)
		out[ext] = b
	}
	return out
}

// debris lists temporary files left in ws.root/dir.
func (ws suiteWS) debris(dir string) []string {
	var found []string
	filepath.WalkDir(filepath.Join(ws.root, dir), func(p string, de os.DirEntry, err error) error {
		if err == nil && strings.Contains(de.Name(), ".tmp") {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// serialReference encodes in (copied into a fresh workspace and cache under
// the same name) serially.
func serialReference(t *testing.T, bin, in, out string) map[string][]byte {
	ws := newSuiteWS(t, t.TempDir())
	data, err := os.ReadFile(in)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ws.root, filepath.Base(in)), data, 0o644))
	ws.run(t, bin, "encode:file", filepath.Base(in), suiteTokenizer, out)
	return ws.dataset(t, out)
}

func sideBySide(t *testing.T, bin string, runs []suiteWS, args [][]string) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd, out := runs[i].target(ctx, bin, args[i]...)
			assert.NoError(t, cmd.Run(), "%s: %s", strings.Join(args[i], " "), out)
		}()
	}
	wg.Wait()
}

const suiteRounds = 3

func TestConcurrentTargetsSameKey(t *testing.T) {
	bin := rivalBinary(t)
	ws := newSuiteWS(t, t.TempDir())
	in := suiteCorpus(t, ws.root, "big.jsonl", "a", 16)
	want := serialReference(t, bin, in, "out/big")
	for round := 0; round < suiteRounds; round++ {
		require.NoError(t, os.RemoveAll(filepath.Join(ws.root, "out")))
		ws.cache = t.TempDir()
		args := []string{"encode:file", "big.jsonl", suiteTokenizer, "out/big"}
		sideBySide(t, bin, []suiteWS{ws, ws, ws}, [][]string{args, args, args})
		assert.Equal(t, want, ws.dataset(t, "out/big"), "round %d", round)
		assert.Empty(t, ws.debris("out"))
	}
}

func TestConcurrentTargetsDifferentKeysOneOutputPath(t *testing.T) {
	bin := rivalBinary(t)
	ws := newSuiteWS(t, t.TempDir())
	inA := suiteCorpus(t, ws.root, "big.jsonl", "a", 16)
	inB := suiteCorpus(t, ws.root, "big2.jsonl", "b", 12)
	// The serial references are written to out/big by each input alone.
	wantA := serialReference(t, bin, inA, "out/big")
	wantB := serialReference(t, bin, inB, "out/big")
	require.NotEqual(t, wantA[".bin"], wantB[".bin"])
	for round := 0; round < suiteRounds; round++ {
		ws.cache = t.TempDir()
		sideBySide(t, bin, []suiteWS{ws, ws}, [][]string{
			{"encode:file", "big.jsonl", suiteTokenizer, "out/big"},
			{"encode:file", "big2.jsonl", suiteTokenizer, "out/big"},
		})
		// Each key's cache hit must give its own input's dataset.
		out := ws.run(t, bin, "encode:file", "big.jsonl", suiteTokenizer, "out/big")
		assert.Contains(t, out, "tasks: 0 run, 1 cached")
		assert.Equal(t, wantA, ws.dataset(t, "out/big"), "round %d: big.jsonl", round)
		out = ws.run(t, bin, "encode:file", "big2.jsonl", suiteTokenizer, "out/big")
		assert.Contains(t, out, "tasks: 0 run, 1 cached")
		assert.Equal(t, wantB, ws.dataset(t, "out/big"), "round %d: big2.jsonl", round)
		ws.run(t, bin, "cache:verify")
	}
}

func TestConcurrentTargetsTwoWorkspacesOneCache(t *testing.T) {
	bin := rivalBinary(t)
	shared := t.TempDir()
	a, b := newSuiteWS(t, shared), newSuiteWS(t, shared)
	in := suiteCorpus(t, a.root, "big.jsonl", "a", 16)
	data, err := os.ReadFile(in)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(b.root, "big.jsonl"), data, 0o644))
	want := serialReference(t, bin, in, "out/big")
	args := []string{"encode:file", "big.jsonl", suiteTokenizer, "out/big"}
	for round := 0; round < suiteRounds; round++ {
		for _, ws := range []suiteWS{a, b} {
			require.NoError(t, os.RemoveAll(filepath.Join(ws.root, "out")))
		}
		sideBySide(t, bin, []suiteWS{a, b}, [][]string{args, args})
		assert.Equal(t, want, a.dataset(t, "out/big"), "round %d: first checkout", round)
		assert.Equal(t, want, b.dataset(t, "out/big"), "round %d: second checkout", round)
	}
}

// kill -9 at points spread over a run (encode, then store) and over a
// restore (a cache hit materializing): the next run always ends with the
// serial run's bytes, no temporary file, and a cache that verifies.
func TestKillNineAtEveryPhase(t *testing.T) {
	bin := rivalBinary(t)
	kills := 4
	if v := os.Getenv("RIVAL_CONCURRENCY_KILLS"); v != "" {
		fmt.Sscan(v, &kills)
	}
	ws := newSuiteWS(t, t.TempDir())
	in := suiteCorpus(t, ws.root, "big.jsonl", "a", 32)
	want := serialReference(t, bin, in, "out/big")
	args := []string{"encode:file", "big.jsonl", suiteTokenizer, "out/big"}

	// How long a run and a restore take, to spread the kills over them.
	ws.cache = t.TempDir()
	start := time.Now()
	ws.run(t, bin, args...)
	runTime := time.Since(start)
	require.NoError(t, os.RemoveAll(filepath.Join(ws.root, "out")))
	start = time.Now()
	ws.run(t, bin, args...)
	restoreTime := time.Since(start)
	t.Logf("a run took %v, a restore %v", runTime, restoreTime)

	total := 0
	for _, phase := range []struct {
		name    string
		span    time.Duration
		prepare func()
	}{
		{"run and store", runTime, func() {
			ws.cache = t.TempDir()
			os.RemoveAll(filepath.Join(ws.root, "out"))
		}},
		{"restore", restoreTime, func() {
			// An older dataset in place, so a torn restore would mix them.
			os.MkdirAll(filepath.Join(ws.root, "out"), 0o755)
			for _, ext := range []string{".bin", ".idx", ".rival.json"} {
				os.WriteFile(filepath.Join(ws.root, "out/big"+ext), []byte("old "+ext), 0o644)
			}
		}},
	} {
		for k := 0; k < kills; k++ {
			phase.prepare()
			delay := phase.span * time.Duration(k+1) / time.Duration(kills+1)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd, _ := ws.target(ctx, bin, args...)
			require.NoError(t, cmd.Start())
			time.Sleep(delay)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			cancel()
			total++
			ws.run(t, bin, args...)
			assert.Equal(t, want, ws.dataset(t, "out/big"), "%s, kill after %v", phase.name, delay)
			assert.Empty(t, ws.debris("out"), "%s, kill after %v: temporary files left", phase.name, delay)
			ws.run(t, bin, "cache:verify")
		}
	}
	t.Logf("%d kill -9 rounds, each followed by a byte-identical rerun", total)
}

// SIGTERM (timeout, systemd, Slurm) stops the real target binary even when
// the target is stuck reading outside its context: extract of /dev/zero.
func TestSIGTERMStopsExtractOfDevZero(t *testing.T) {
	bin := rivalBinary(t)
	ws := newSuiteWS(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, out := ws.target(ctx, bin, "extract", "/dev/zero")
	require.NoError(t, cmd.Start())
	time.Sleep(time.Second)
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	cmd.Wait()
	assert.Less(t, time.Since(start), 6*time.Second, "output:\n%s", out)
	assert.NotEqual(t, 0, cmd.ProcessState.ExitCode())
}

// Two filters of one corpus with different thresholds, writing one output
// path at once (the pipeline's filter under two FILTER_MIN_WORDS): each
// threshold's cache hit must give its own filtered corpus.
func TestConcurrentFiltersDifferentSettingsOneOutput(t *testing.T) {
	bin := rivalBinary(t)
	ws := newSuiteWS(t, t.TempDir())
	suiteCorpus(t, ws.root, "big.jsonl", "a", 16)
	want := map[string][]byte{}
	for _, words := range []string{"1", "60"} {
		ref := ws
		ref.cache, ref.env = t.TempDir(), []string{"FILTER_MIN_CHARS=1", "FILTER_MIN_WORDS=" + words}
		ref.run(t, bin, "filter:file", "big.jsonl", "out/kept.jsonl")
		b, err := os.ReadFile(filepath.Join(ws.root, "out/kept.jsonl"))
		require.NoError(t, err)
		want[words] = b
	}
	require.NotEqual(t, want["1"], want["60"])
	for round := 0; round < suiteRounds; round++ {
		shared := t.TempDir()
		a, b := ws, ws
		a.cache, b.cache = shared, shared
		a.env = []string{"FILTER_MIN_CHARS=1", "FILTER_MIN_WORDS=1"}
		b.env = []string{"FILTER_MIN_CHARS=1", "FILTER_MIN_WORDS=60"}
		args := []string{"filter:file", "big.jsonl", "out/kept.jsonl"}
		sideBySide(t, bin, []suiteWS{a, b}, [][]string{args, args})
		for _, c := range []struct {
			ws    suiteWS
			words string
		}{{a, "1"}, {b, "60"}} {
			out := c.ws.run(t, bin, args...)
			assert.Contains(t, out, "tasks: 0 run, 1 cached")
			got, err := os.ReadFile(filepath.Join(ws.root, "out/kept.jsonl"))
			require.NoError(t, err)
			assert.Equal(t, want[c.words], got, "round %d: FILTER_MIN_WORDS=%s", round, c.words)
		}
	}
}
