package tasks

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two-spellings scenario: three encodes with different inputs (so
// different keys) write one dataset, each reaching it by another spelling:
// the checkout itself, the checkout entered through a symlink, and a second
// checkout whose out/ is a symlink to the first one's. The first is well
// into writing when the other two start. Every run must succeed, each key's
// cache hit must restore its own input's dataset, and cache:verify must
// pass, in every round.
//
// RIVAL_SPELLINGS_MB sets each input's size (default 8; .ci/run uses
// hundreds, so the overlap lasts seconds) and RIVAL_SPELLINGS_ROUNDS the
// rounds (default 5; .ci/run: 20).
func TestTwoSpellingsOfOneDatasetNeverSwapRecords(t *testing.T) {
	bin := rivalBinary(t)
	mb, rounds := envInt(t, "RIVAL_SPELLINGS_MB", 8), envInt(t, "RIVAL_SPELLINGS_ROUNDS", 5)
	real := t.TempDir()
	alias := filepath.Join(t.TempDir(), "checkout")
	require.NoError(t, os.Symlink(real, alias))
	second := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(real, "out"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(real, "out"), filepath.Join(second, "out")))
	for _, d := range []string{real, second} {
		require.NoError(t, os.WriteFile(filepath.Join(d, "config.env"), nil, 0o644))
	}
	type run struct {
		ws   suiteWS
		in   string
		want map[string][]byte
	}
	runs := []*run{
		{ws: suiteWS{root: real}, in: "a.jsonl"},
		{ws: suiteWS{root: alias, env: []string{"PWD=" + alias}}, in: "b.jsonl"},
		{ws: suiteWS{root: second}, in: "c.jsonl"},
	}
	for i, r := range runs {
		p := bigCorpus(t, filepath.Join(r.ws.root, r.in), string(rune('a'+i)), int64(mb)<<20)
		r.want = serialReference(t, bin, p, "out/big")
	}
	require.False(t, bytes.Equal(runs[0].want[".bin"], runs[1].want[".bin"]), "the inputs must differ in their tokens")
	deadline := time.Duration(30+mb) * 3 * time.Second
	for round := 0; round < rounds; round++ {
		cacheDir := t.TempDir()
		for _, r := range runs {
			r.ws.cache = cacheDir
		}
		require.NoError(t, os.RemoveAll(filepath.Join(real, "out")))
		require.NoError(t, os.MkdirAll(filepath.Join(real, "out"), 0o755))
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		errs := make(chan error, len(runs))
		start := func(r *run) {
			cmd, out := r.ws.target(ctx, bin, "encode:file", r.in, suiteTokenizer, "out/big")
			go func() {
				err := cmd.Run()
				if err != nil {
					err = fmt.Errorf("%s in %s: %v\n%s", r.in, r.ws.root, err, out)
				}
				errs <- err
			}()
		}
		start(runs[0])
		// The others start while the first is writing its dataset.
		require.Eventually(t, func() bool { return len(suiteDebris(filepath.Join(real, "out"))) > 0 }, deadline, time.Millisecond,
			"round %d: the first encode never started writing", round)
		for _, r := range runs[1:] {
			start(r)
		}
		for range runs {
			assert.NoError(t, <-errs, "round %d", round)
		}
		cancel()
		for _, r := range runs {
			out := r.ws.run(t, bin, "encode:file", r.in, suiteTokenizer, "out/big")
			assert.Contains(t, out, "tasks: 0 run, 1 cached", "round %d: %s", round, r.in)
			assert.Equal(t, datasetDigests(r.want), datasetDigests(r.ws.dataset(t, "out/big")), "round %d: the cache hit of %s in %s restores its own dataset", round, r.in, r.ws.root)
		}
		runs[0].ws.run(t, bin, "cache:verify")
		assert.Empty(t, suiteDebris(filepath.Join(real, "out")), "round %d", round)
		if t.Failed() {
			t.Fatalf("round %d of %d failed", round+1, rounds)
		}
	}
}

// suiteDebris lists temporary files in dir.
func suiteDebris(dir string) []string {
	var found []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			found = append(found, e.Name())
		}
	}
	return found
}

// bigCorpus writes about size bytes of the sample corpus to path, every
// document marked with variant and its copy number.
func bigCorpus(t *testing.T, path, variant string, size int64) string {
	t.Helper()
	src, err := os.ReadFile("../testdata/sample/corpus.jsonl")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(src)), "\n")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for i := 0; n < size; i++ {
		for _, l := range lines {
			k, _ := fmt.Fprintf(w, "{\"text\":\"%s %d. %s\n", variant, i, strings.TrimPrefix(l, `{"text":"`))
			n += int64(k)
		}
	}
	require.NoError(t, w.Flush())
	return path
}

// datasetDigests names each file of a dataset by its SHA-256, so a
// mismatch is reported in a line, not a dump.
func datasetDigests(ds map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range ds {
		out[k] = fmt.Sprintf("%x", sha256.Sum256(v))
	}
	return out
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s=%q: want a whole number", name, v)
	return n
}
