package cache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillSmall stores n records of one small output each (about 18 bytes, as a
// cache of many tiny task outputs holds), with the outputs present in ws.
func fillSmall(tb testing.TB, c *Cache, ws string, n int) []string {
	tb.Helper()
	outs := make([]string, n)
	errs := make([]error, n)
	// Filled side by side: each store waits on an fsync.
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				fillOne(c, ws, i, outs, errs)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return outs
}

// fillOne writes output i and stores it with its record.
func fillOne(c *Cache, ws string, i int, outs []string, errs []error) {
	p := filepath.Join(ws, fmt.Sprintf("o%d.txt", i))
	outs[i] = p
	if errs[i] = os.WriteFile(p, []byte(fmt.Sprintf("output number %d\n", i)), 0o644); errs[i] != nil {
		return
	}
	d, size, err := c.PutOutput(p, false, true)
	if errs[i] = err; err != nil {
		return
	}
	k := HashBytes([]byte(p))
	errs[i] = c.PutRecord(Record{Key: k, Task: "t " + strconv.Itoa(i), Outputs: []Output{{Digest: d, Size: size, AbsPath: p}}})
}

// TestVerifyWritesNothingForUnchangedOutputs: verify rereads every output, but
// rewrites a stat-cache entry only when it says something else.
func TestVerifyWritesNothingForUnchangedOutputs(t *testing.T) {
	c := newCache(t)
	ws := t.TempDir()
	outs := fillSmall(t, c, ws, 20)
	entry := func(p string) os.FileInfo {
		fi, err := os.Stat(c.statEntryPath(p))
		require.NoError(t, err)
		return fi
	}
	before := map[string]os.FileInfo{}
	for _, p := range outs {
		before[p] = entry(p)
	}
	// One output changes behind the cache's back.
	require.NoError(t, os.WriteFile(outs[3], []byte("edited\n"), 0o644))
	rep, err := c.Verify(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, 20, rep.OutputsChecked)
	assert.Equal(t, 20, rep.BlobsChecked)
	assert.Equal(t, []string{outs[3]}, rep.ModifiedOutputs)
	for _, p := range outs {
		if p == outs[3] {
			assert.NotEqual(t, before[p].ModTime(), entry(p).ModTime(), "the changed output's entry is rewritten")
			continue
		}
		assert.True(t, os.SameFile(before[p], entry(p)) && before[p].ModTime().Equal(entry(p).ModTime()),
			"%s: an unchanged output's stat entry is not rewritten", p)
	}
}

// BenchmarkVerifySmallEntries runs cache:verify over RIVAL_BENCH_VERIFY_ENTRIES
// records of one small output each (default 5,000; 50,000 for the figure in
// docs/measurements.md) and, as the reference in the same run, b3sum over the
// same blob and output files. With RIVAL_BENCH_VERIFY_DIR the cache and its
// outputs are kept in that folder (filled once), so that -count rounds, and
// two builds run one after the other, alternate on the same files:
//
//	RIVAL_BENCH_VERIFY_ENTRIES=50000 RIVAL_BENCH_VERIFY_DIR=/tmp/verify50k \
//	  go test ./cache -run '^$' -bench VerifySmallEntries -benchmem -benchtime 1x -count 3
func BenchmarkVerifySmallEntries(b *testing.B) {
	n := 5000
	if v := os.Getenv("RIVAL_BENCH_VERIFY_ENTRIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("RIVAL_BENCH_VERIFY_ENTRIES=%q is not a positive count", v)
		}
	}
	dir, ws := b.TempDir(), b.TempDir()
	kept := os.Getenv("RIVAL_BENCH_VERIFY_DIR")
	if kept != "" {
		dir, ws = filepath.Join(kept, "cache"), filepath.Join(kept, "ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	c, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	marker := filepath.Join(kept, fmt.Sprintf("filled-%d", n))
	if _, err := os.Stat(marker); kept == "" || err != nil {
		fillSmall(b, c, ws, n)
		if kept != "" {
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	// CPU time is reported beside wall time: on a shared machine it is what
	// the two sides can be compared by (this process for verify; sh, find,
	// xargs and b3sum for the reference).
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		c0 := selfCPU()
		defer func() {
			b.ReportMetric(float64((selfCPU()-c0).Microseconds())/float64(b.N)/float64(2*n), "cpu-µs/file")
		}()
		for b.Loop() {
			rep, err := c.Verify(context.Background(), nil)
			if err != nil || rep.OutputsChecked != n || len(rep.ModifiedOutputs) != 0 {
				b.Fatalf("%+v %v", rep, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(2*n), "µs/file")
	})
	if _, err := exec.LookPath("b3sum"); err == nil {
		b.Run("b3sum", func(b *testing.B) {
			// find | xargs b3sum: the same 2n files (blobs and outputs).
			script := fmt.Sprintf("find %q/blobs %q -type f -print0 | xargs -0 b3sum > /dev/null", c.Dir, ws)
			c0 := childrenCPU()
			defer func() {
				b.ReportMetric(float64((childrenCPU()-c0).Microseconds())/float64(b.N)/float64(2*n), "cpu-µs/file")
			}()
			for b.Loop() {
				if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(2*n), "µs/file")
		})
	}
}
