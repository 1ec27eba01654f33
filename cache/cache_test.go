package cache

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"
)

func newCache(t *testing.T) *Cache {
	t.Helper()
	c, err := Open(t.TempDir())
	require.NoError(t, err)
	return c
}

func TestBlobRoundTrip(t *testing.T) {
	for _, compress := range []bool{false, true} {
		c := newCache(t)
		data := bytes.Repeat([]byte("a line of log text\n"), 1000)
		d, err := c.PutBytes(data, compress)
		require.NoError(t, err)
		assert.Equal(t, HashBytes(data), d)
		got, err := c.ReadBlob(d)
		require.NoError(t, err)
		assert.Equal(t, data, got)

		src := filepath.Join(t.TempDir(), "src.txt")
		require.NoError(t, os.WriteFile(src, data, 0o644))
		d2, n, err := c.PutFile(src, compress)
		require.NoError(t, err)
		assert.Equal(t, d, d2)
		assert.EqualValues(t, len(data), n)

		dst := filepath.Join(t.TempDir(), "out", "dst.txt")
		require.NoError(t, c.Materialize(d, dst, 0o644))
		back, err := os.ReadFile(dst)
		require.NoError(t, err)
		assert.Equal(t, data, back)
	}
}

func TestCompressionPaysForText(t *testing.T) {
	c := newCache(t)
	data := bytes.Repeat([]byte(`{"step": 1, "loss": 2.5}`+"\n"), 5000)
	d, err := c.PutBytes(data, true)
	require.NoError(t, err)
	fi, err := os.Stat(c.blobPath(d, true))
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(len(data)/10))
}

// flipByte corrupts one byte of the stored blob in place.
func flipByte(t *testing.T, c *Cache, d Digest) {
	t.Helper()
	p := c.blobPath(d, false)
	if _, err := os.Stat(p); err != nil {
		p = c.blobPath(d, true)
	}
	require.NoError(t, os.Chmod(p, 0o644))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)/2] ^= 0x40
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

func TestCorruptBlobIsAbsentAndReported(t *testing.T) {
	for _, compress := range []bool{false, true} {
		c := newCache(t)
		var warnings []string
		c.Warn = func(m string) { warnings = append(warnings, m) }
		d, err := c.PutBytes(bytes.Repeat([]byte("0123456789"), 100), compress)
		require.NoError(t, err)
		flipByte(t, c, d)
		_, err = c.ReadBlob(d)
		assert.ErrorIs(t, err, ErrNotFound)
		require.NotEmpty(t, warnings)
		assert.Contains(t, warnings[0], d.Short())
		assert.False(t, c.HasBlob(d), "corrupt blob must be dropped")
	}
}

func TestMaterializeCorruptLeavesDestUntouched(t *testing.T) {
	c := newCache(t)
	d, err := c.PutBytes([]byte(strings.Repeat("tokens ", 500)), false)
	require.NoError(t, err)
	flipByte(t, c, d)
	dst := filepath.Join(t.TempDir(), "dst")
	require.NoError(t, os.WriteFile(dst, []byte("old"), 0o644))
	err = c.Materialize(d, dst, 0o644)
	assert.ErrorIs(t, err, ErrNotFound)
	got, _ := os.ReadFile(dst)
	assert.Equal(t, "old", string(got))
	entries, _ := os.ReadDir(filepath.Dir(dst))
	assert.Len(t, entries, 1, "no temporary file left behind")
}

func TestVerifyCatchesFlippedByte(t *testing.T) {
	c := newCache(t)
	good, err := c.PutBytes([]byte("good blob"), false)
	require.NoError(t, err)
	bad, err := c.PutBytes(bytes.Repeat([]byte("bad blob "), 50), true)
	require.NoError(t, err)
	require.NoError(t, c.PutRecord(Record{Key: HashBytes([]byte("k1")), Task: "filter x", Outputs: []Output{{Path: "x", Digest: bad}}}))
	require.NoError(t, c.PutRecord(Record{Key: HashBytes([]byte("k2")), Task: "filter y", Outputs: []Output{{Path: "y", Digest: good}}}))
	flipByte(t, c, bad)

	rep, err := c.Verify(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.BlobsChecked)
	assert.Equal(t, []Digest{bad}, rep.CorruptBlobs)
	assert.Equal(t, 1, rep.RecordsDropped)
	_, err = c.GetRecord(HashBytes([]byte("k1")))
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = c.GetRecord(HashBytes([]byte("k2")))
	assert.NoError(t, err)
}

func TestVerifyReportsModifiedOutput(t *testing.T) {
	c := newCache(t)
	out := filepath.Join(t.TempDir(), "out.txt")
	require.NoError(t, os.WriteFile(out, []byte("original"), 0o644))
	d, _, err := c.PutFile(out, false)
	require.NoError(t, err)
	require.NoError(t, c.PutRecord(Record{Key: HashBytes([]byte("k")), Task: "t", Outputs: []Output{{Path: "out.txt", AbsPath: out, Digest: d}}}))
	require.NoError(t, os.WriteFile(out, []byte("edited!!"), 0o644))
	rep, err := c.Verify(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{out}, rep.ModifiedOutputs)
}

func TestStatCacheAvoidsRereads(t *testing.T) {
	c := newCache(t)
	p := filepath.Join(t.TempDir(), "big.bin")
	require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte{7}, 1<<16), 0o644))
	d1, _, err := c.FileDigest(p)
	require.NoError(t, err)
	assert.EqualValues(t, 1, c.FileReads())
	d2, _, err := c.FileDigest(p)
	require.NoError(t, err)
	assert.Equal(t, d1, d2)
	assert.EqualValues(t, 1, c.FileReads(), "unchanged file must not be reread")

	// Same size, new content: mtime/ctime change, so it is reread.
	require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte{8}, 1<<16), 0o644))
	d3, _, err := c.FileDigest(p)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d3)
	assert.EqualValues(t, 2, c.FileReads())

	// A touch alone (same bytes) rereads but yields the same digest.
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(p, later, later))
	d4, _, err := c.FileDigest(p)
	require.NoError(t, err)
	assert.Equal(t, d3, d4)
	assert.EqualValues(t, 3, c.FileReads())
}

func TestTreeDigest(t *testing.T) {
	c := newCache(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("B"), 0o644))
	d1, n, err := c.TreeDigest(dir)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	require.NoError(t, os.Rename(filepath.Join(dir, "sub", "b"), filepath.Join(dir, "b")))
	d2, _, err := c.TreeDigest(dir)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2, "moving a file changes the tree digest")
	require.NoError(t, os.Symlink("a", filepath.Join(dir, "link")))
	_, _, err = c.TreeDigest(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

func TestActionKey(t *testing.T) {
	a := []KeyPart{{"param", "SL", "2048"}, {"file", "in", "abc"}}
	b := []KeyPart{{"file", "in", "abc"}, {"param", "SL", "2048"}}
	assert.Equal(t, ActionKey(a), ActionKey(b), "order of parts does not matter")
	tests := []struct {
		name string
		x, y []KeyPart
	}{
		{"value differs", []KeyPart{{"param", "SL", "2048"}}, []KeyPart{{"param", "SL", "4096"}}},
		{"boundary shift", []KeyPart{{"param", "ab", "c"}}, []KeyPart{{"param", "a", "bc"}}},
		{"kind differs", []KeyPart{{"param", "x", "1"}}, []KeyPart{{"env", "x", "1"}}},
		{"extra part", []KeyPart{{"param", "x", "1"}}, []KeyPart{{"param", "x", "1"}, {"param", "y", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.NotEqual(t, ActionKey(tt.x), ActionKey(tt.y))
		})
	}
}

func TestRecordsAndLastInputs(t *testing.T) {
	c := newCache(t)
	d, err := c.PutBytes([]byte("out"), false)
	require.NoError(t, err)
	key := HashBytes([]byte("key"))
	inputs := []KeyPart{{"param", "SL", "2048"}}
	require.NoError(t, c.PutRecord(Record{Key: key, Task: "encode bc llama", Inputs: inputs, Outputs: []Output{{Path: "o", Digest: d}}}))
	r, err := c.GetRecord(key)
	require.NoError(t, err)
	assert.Equal(t, "encode bc llama", r.Task)
	last, ok := c.LastInputs("encode bc llama")
	require.True(t, ok)
	assert.Equal(t, inputs, last)
	_, err = c.GetRecord(HashBytes([]byte("other")))
	assert.ErrorIs(t, err, ErrNotFound)

	// A record whose blob is gone is as good as absent.
	require.NoError(t, os.Remove(c.blobPath(d, false)))
	_, err = c.GetRecord(key)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestStatsCountsHits(t *testing.T) {
	c := newCache(t)
	d, _ := c.PutBytes([]byte("x"), false)
	key := HashBytes([]byte("k"))
	require.NoError(t, c.PutRecord(Record{Key: key, Task: "filter a", Outputs: []Output{{Digest: d}}}))
	c.Hit(key)
	c.Hit(key)
	s, err := c.Stats()
	require.NoError(t, err)
	assert.Equal(t, 1, s.Records)
	assert.Equal(t, 1, s.Blobs)
	assert.Equal(t, 2, s.Hits)
	assert.Equal(t, 2, s.HitsByTask["filter"])
}

// duBytes is what `du -s -B1` says dir takes on disk (the independent measure
// the cache's own accounting must agree with); it skips the test without du.
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	out, err := exec.Command("du", "-s", "-B1", dir).Output()
	if err != nil {
		t.Skipf("du -s -B1 %s: %v (coreutils' du is needed)", dir, err)
	}
	n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	require.NoError(t, err)
	return n
}

// fillForTrim stores n records, oldest first, each with a 100 kB blob, an
// output file in ws (so a stat entry), a last-run entry and a lock file.
func fillForTrim(t *testing.T, c *Cache, ws string, n int) []Digest {
	t.Helper()
	old := time.Now().Add(-48 * time.Hour)
	var keys []Digest
	for i := range n {
		out := filepath.Join(ws, fmt.Sprintf("out%d.bin", i))
		b := make([]byte, 100_000)
		for j := range b {
			b[j] = byte(j*7 + i*13 + j/251)
		}
		require.NoError(t, os.WriteFile(out, b, 0o644))
		d, _, err := c.PutOutput(out, false, true)
		require.NoError(t, err)
		k := HashBytes([]byte{byte(i)})
		keys = append(keys, k)
		require.NoError(t, c.PutRecord(Record{Key: k, Task: fmt.Sprintf("t %d", i), Outputs: []Output{{Digest: d, AbsPath: out}}}))
		lk, err := c.Lock(context.Background(), k.String())
		require.NoError(t, err)
		lk.Unlock()
		when := old.Add(time.Duration(i) * time.Hour)
		require.NoError(t, os.Chtimes(c.recordPath(k), when, when))
	}
	return keys
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func TestTrimToHalfFreesWhatItSays(t *testing.T) {
	c := newCache(t)
	keys := fillForTrim(t, c, t.TempDir(), 4)
	before, err := c.Stats()
	require.NoError(t, err)
	require.Equal(t, duBytes(t, c.Dir), before.DiskBytes, "stats count what du counts")
	require.Equal(t, 4, before.AreaFiles["locks"])
	require.Equal(t, 4, before.StatEntries)

	rep, err := c.Trim(context.Background(), before.DiskBytes/2, 0)
	require.NoError(t, err)
	after := duBytes(t, c.Dir)
	assert.Equal(t, after, rep.BytesKept, "kept is what is on disk")
	assert.Equal(t, before.DiskBytes-after, rep.BytesFreed, "freed is what left the disk")
	assert.LessOrEqual(t, rep.BytesKept, before.DiskBytes/2)
	assert.Positive(t, rep.RecordsRemoved)
	assert.Equal(t, rep.RecordsRemoved, rep.BlobsRemoved)
	assert.Equal(t, rep.RecordsRemoved, rep.StatRemoved)
	assert.Equal(t, rep.RecordsRemoved, rep.TasksRemoved)
	for i, k := range keys {
		_, err := c.GetRecord(k)
		if i < rep.RecordsRemoved {
			assert.ErrorIs(t, err, ErrNotFound, "least recently used go first")
		} else {
			assert.NoError(t, err)
		}
	}
}

func TestTrimRemovesStatTasksAndLocks(t *testing.T) {
	c := newCache(t)
	fillForTrim(t, c, t.TempDir(), 5)
	// A lock someone holds stays.
	held, err := c.Lock(context.Background(), "busy")
	require.NoError(t, err)
	rep, err := c.Trim(context.Background(), 0, 24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 5, rep.RecordsRemoved, "records unused for over a day go")
	assert.Equal(t, 0, countFiles(t, filepath.Join(c.Dir, "stat")))
	assert.Equal(t, 0, countFiles(t, filepath.Join(c.Dir, "tasks")))
	assert.Equal(t, 0, countFiles(t, filepath.Join(c.Dir, "blobs")))
	locks, err := os.ReadDir(filepath.Join(c.Dir, "locks"))
	require.NoError(t, err)
	var names []string
	for _, de := range locks {
		names = append(names, de.Name())
	}
	assert.ElementsMatch(t, []string{"busy.lock", "trim.lock"}, names, "trim holds its own lock while it runs; idle locks go")
	require.NoError(t, held.Unlock())
	_, err = c.Trim(context.Background(), 0, 24*time.Hour)
	require.NoError(t, err)
	locks, _ = os.ReadDir(filepath.Join(c.Dir, "locks"))
	assert.Len(t, locks, 1, "only trim's own lock is left: %v", locks)
}

// TestLockSurvivesRemoval: a process that opened a lock file which trim then
// removed locks the new file at the path, so two holders never coexist.
func TestLockSurvivesRemoval(t *testing.T) {
	c := newCache(t)
	ctx := context.Background()
	l1, err := c.Lock(ctx, "k")
	require.NoError(t, err)
	got := make(chan *Lock)
	go func() {
		l2, err := c.Lock(ctx, "k")
		if err == nil {
			got <- l2
		}
	}()
	time.Sleep(50 * time.Millisecond) // the second opened the file and waits
	path := filepath.Join(c.Dir, "locks", "k.lock")
	require.NoError(t, os.Remove(path)) // as removeIdleLock does, while held
	require.NoError(t, l1.Unlock())
	l2 := <-got
	defer l2.Unlock()
	// The second holder holds the file at the path: a third must wait.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.Lock(short, "k")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, removeIdleLock(path), "a held lock is never removed")
}

func TestLockExcludesAndWaits(t *testing.T) {
	c := newCache(t)
	ctx := context.Background()
	l1, err := c.Lock(ctx, "k")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.Lock(short, "k")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var wg sync.WaitGroup
	got := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		l2, err := c.Lock(ctx, "k")
		if err == nil {
			close(got)
			l2.Unlock()
		}
	}()
	time.Sleep(30 * time.Millisecond)
	require.NoError(t, l1.Unlock())
	wg.Wait()
	select {
	case <-got:
	default:
		t.Fatal("second locker never got the lock")
	}
}

// TestKilledWriterLeavesNoTornFile kills a process in the middle of a large
// atomic write: the destination is either absent or whole.
func TestKilledWriterLeavesNoTornFile(t *testing.T) {
	if os.Getenv("RIVAL_CACHE_HELPER_WRITE") != "" {
		dest := os.Getenv("RIVAL_CACHE_HELPER_WRITE")
		WriteAtomic(dest, 0o644, func(w *bufio.Writer) error {
			for i := 0; ; i++ {
				if _, err := w.Write(bytes.Repeat([]byte{byte(i)}, 1<<16)); err != nil {
					return err
				}
				if i == 64 {
					os.WriteFile(dest+".started", nil, 0o644)
				}
				time.Sleep(time.Millisecond)
			}
		})
		return
	}
	dest := filepath.Join(t.TempDir(), "out.bin")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterLeavesNoTornFile$")
	cmd.Env = append(os.Environ(), "RIVAL_CACHE_HELPER_WRITE="+dest)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(dest + ".started"); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "writer never started")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	_, err := os.Stat(dest)
	assert.True(t, errors.Is(err, os.ErrNotExist), "a killed write must not leave the destination")
}

func BenchmarkHashBLAKE3(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		blake3.Sum256(data)
	}
}

func BenchmarkHashSHA256(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<20)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		sha256.Sum256(data)
	}
}

// TestPutOutputReadsOnce: a task that stored its output itself (to learn the
// digest) leaves the runner's store a stat call, not a second read; a missing
// blob or the other storage form is stored again.
func TestPutOutputReadsOnce(t *testing.T) {
	c := newCache(t)
	p := filepath.Join(t.TempDir(), "c4-llama-train.bin")
	require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte{3, 1, 4}, 1<<15), 0o644))
	d1, n1, err := c.PutOutput(p, false, true)
	require.NoError(t, err)
	assert.EqualValues(t, 1, c.FileReads())
	d2, n2, err := c.PutOutput(p, false, true)
	require.NoError(t, err)
	assert.Equal(t, d1, d2)
	assert.Equal(t, n1, n2)
	assert.EqualValues(t, 1, c.FileReads(), "stored and unchanged: not read again")

	_, _, err = c.PutOutput(p, true, true)
	require.NoError(t, err)
	assert.EqualValues(t, 2, c.FileReads(), "asked compressed, stored plain: stored again")

	require.NoError(t, os.Remove(c.blobPath(d1, false)))
	d3, _, err := c.PutOutput(p, false, true)
	require.NoError(t, err)
	assert.Equal(t, d1, d3)
	assert.EqualValues(t, 3, c.FileReads(), "blob gone: stored again")
	assert.True(t, c.hasBlobAs(d1, false))
}

// cache:trim with an age limit removes the programs of bin/ that no run built or started for that
// long, with their lock files, and keeps the recent ones and one a process is building.
func TestTrimRemovesOldPrograms(t *testing.T) {
	c, err := Open(t.TempDir())
	require.NoError(t, err)
	bin := filepath.Join(c.Dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	old := time.Now().Add(-48 * time.Hour)
	for name, mtime := range map[string]time.Time{"rival-plot-aaaa": old, "rival-kube-bbbb": time.Now(), "rival-parquet-cccc": old} {
		p := filepath.Join(bin, name)
		require.NoError(t, os.WriteFile(p, []byte("program"), 0o755))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
	}
	// A build of rival-parquet-cccc is under way: its lock is held.
	f, err := os.OpenFile(filepath.Join(bin, "rival-parquet-cccc.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
	defer f.Close()

	rep, err := c.Trim(context.Background(), 0, 24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.ProgramsRemoved)
	assert.NoFileExists(t, filepath.Join(bin, "rival-plot-aaaa"))
	assert.FileExists(t, filepath.Join(bin, "rival-kube-bbbb"), "used within the age limit")
	assert.FileExists(t, filepath.Join(bin, "rival-parquet-cccc"), "being built")
	assert.NoFileExists(t, filepath.Join(bin, "rival-plot-aaaa.lock"), "its lock goes with it")
	assert.FileExists(t, filepath.Join(bin, "rival-parquet-cccc.lock"), "a held lock stays")

	rep, err = c.Trim(context.Background(), 0, 0)
	require.NoError(t, err)
	assert.Zero(t, rep.ProgramsRemoved, "no age limit: no program is old")
}
