package cache

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
)

// parallelSizes cross every boundary of the tree: chunk, SIMD group, unit and the
// powers of two of units, each side.
var parallelSizes = []int64{
	17 * 1024, 16*1024 + 1, 100_000,
	parUnit - 1, parUnit, parUnit + 1,
	parMin - 1024, parMin, parMin + 1, parMin + 1023,
	3*parUnit + 5, 4 * parUnit, 4*parUnit + 1024, 5*parUnit + 12345, 8*parUnit + 1,
}

func writeRandom(t *testing.T, dir string, size int64, seed uint64) (string, []byte) {
	t.Helper()
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p, b
}

// TestParallelHashEqualsSequential compares the tree hashed on several workers
// with the sequential BLAKE3 of another implementation (zeebo/blake3).
func TestParallelHashEqualsSequential(t *testing.T) {
	dir := t.TempDir()
	for i, size := range parallelSizes {
		_, b := writeRandom(t, dir, size, uint64(i))
		want := Digest(blake3.Sum256(b))
		for _, workers := range []int{1, 2, 3} {
			got, err := hashFileParallel(bytes.NewReader(b), size, workers)
			require.NoError(t, err)
			require.Equal(t, want, got, "size %d, %d workers", size, workers)
			got, err = hashMappedParallel(b, workers)
			require.NoError(t, err)
			require.Equal(t, want, got, "in memory: size %d, %d workers", size, workers)
		}
	}
}

// TestParallelHashMatchesB3sum checks HashFile, which takes the parallel path for
// large files, against the b3sum command.
func TestParallelHashMatchesB3sum(t *testing.T) {
	if _, err := exec.LookPath("b3sum"); err != nil {
		if os.Getenv("RIVAL_REQUIRE_B3SUM") != "" {
			t.Fatal("b3sum is not installed and RIVAL_REQUIRE_B3SUM is set")
		}
		t.Skip("b3sum not installed: apt-get install b3sum")
	}
	dir := t.TempDir()
	for i, size := range append([]int64{0, 1, 1024, 1025}, parallelSizes...) {
		p, _ := writeRandom(t, dir, size, uint64(100+i))
		out, err := exec.Command("b3sum", "--no-names", p).Output()
		require.NoError(t, err)
		got, n, err := HashFile(p)
		require.NoError(t, err)
		require.Equal(t, size, n)
		require.Equal(t, strings.TrimSpace(string(out)), got.String(), "size %d", size)
	}
}

func TestHashFilesInOrder(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var want []Digest
	for i := range 40 {
		p := filepath.Join(dir, "f"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		b := bytes.Repeat([]byte{byte(i)}, i*37)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		paths = append(paths, p)
		want = append(want, HashBytes(b))
	}
	got, sizes, err := HashFiles(paths, 3)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, int64(39*37), sizes[39])
	_, _, err = HashFiles(append(paths, filepath.Join(dir, "missing")), 2)
	require.ErrorContains(t, err, "missing")
}

// TestMappedFileTruncatedIsAnError: a file cut short while it is mapped and
// hashed makes the access fault; that is an error, not a crash.
func TestMappedFileTruncatedIsAnError(t *testing.T) {
	p, _ := writeRandom(t, t.TempDir(), parMin+parUnit, 9)
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	data, err := syscall.Mmap(int(f.Fd()), 0, parMin+parUnit, syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer syscall.Munmap(data)
	require.NoError(t, os.Truncate(p, 0))
	_, err = hashMappedParallel(data, 2)
	require.ErrorContains(t, err, "truncated")
}

// TestSmallFileChangedSize: a small file that grew or shrank between its stat
// and its read is hashed as it reads, whole.
func TestSmallFileChangedSize(t *testing.T) {
	p, b := writeRandom(t, t.TempDir(), 100, 3)
	for _, said := range []int64{0, 10, 99, 100, 101, 5000} {
		f, err := os.Open(p)
		require.NoError(t, err)
		d, n, err := hashOpenFile(f, said)
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, HashBytes(b), d, "size said %d", said)
		assert.EqualValues(t, 100, n, "size said %d", said)
	}
}
