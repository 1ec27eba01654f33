package cache

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/rivalbench/rival/internal/mounttest"
)

// clones reports whether the file system holding dir clones files (FICLONE).
func clones(t *testing.T, dir string) bool {
	a, err := os.CreateTemp(dir, "clone-a")
	require.NoError(t, err)
	defer os.Remove(a.Name())
	defer a.Close()
	_, err = a.WriteString("x")
	require.NoError(t, err)
	b, err := os.CreateTemp(dir, "clone-b")
	require.NoError(t, err)
	defer os.Remove(b.Name())
	defer b.Close()
	return cloneInto(b, a) == nil
}

// diskOfFiles is the bytes of disk the distinct files under roots take, each
// inode once (as du counts them).
func diskOfFiles(t testing.TB, roots ...string) int64 {
	seen := map[uint64]bool{}
	var total int64
	for _, root := range roots {
		require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil || !fi.Mode().IsRegular() {
				return err
			}
			st := fi.Sys().(*syscall.Stat_t)
			if !seen[st.Ino] {
				seen[st.Ino] = true
				total += st.Blocks * 512
			}
			return nil
		}))
	}
	return total
}

// publish writes content to path as a task does and stores it like the
// runner, uncompressed.
func publish(t *testing.T, c *Cache, path string, content []byte) Digest {
	return publishVia(t, c, path, content, false)
}

// publishVia is publish; with byTask the task stores the output itself first
// (PutOutput, as encode does to learn its digests), then the runner.
func publishVia(t *testing.T, c *Cache, path string, content []byte, byTask bool) Digest {
	require.NoError(t, WriteFileAtomic(path, content, 0o644))
	if byTask {
		_, _, err := c.PutOutput(path, false, true)
		require.NoError(t, err)
	}
	want, err := WrittenID(path)
	require.NoError(t, err)
	d, n, _, err := c.PutPublished(path, false, true, want)
	require.NoError(t, err)
	require.Equal(t, int64(len(content)), n)
	require.Equal(t, HashBytes(content), d)
	return d
}

// TestOutputSharesItsBlob: an uncompressed output on the cache's file system
// is stored as a hard link to (or a clone of) its blob, and restored the same
// way, so the pair takes the disk of one copy; RIVAL_CACHE_LINK=copy copies.
func TestOutputSharesItsBlob(t *testing.T) {
	content := bytes.Repeat([]byte("token ids "), 100_000) // 1 MB
	for _, tc := range []struct {
		name    string
		setting string
		shared  bool

		byTask bool
	}{
		{"default", "", true, false},
		{"stored by the task first", "", true, true},
		{"copy", "copy", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(LinkEnv, tc.setting)
			root := t.TempDir()
			c, err := Open(filepath.Join(root, "cache"))
			require.NoError(t, err)
			ws := filepath.Join(root, "ws")
			out := filepath.Join(ws, "big.bin")
			d := publishVia(t, c, out, content, tc.byTask)
			blob := c.blobPath(d, false)
			got, err := os.ReadFile(blob)
			require.NoError(t, err)
			require.Equal(t, content, got)
			linked := tc.shared && !clones(t, root)
			check := func(what string) {
				bfi, err := os.Stat(blob)
				require.NoError(t, err)
				ofi, err := os.Stat(out)
				require.NoError(t, err)
				assert.Equal(t, linked, os.SameFile(bfi, ofi), "%s: the output is its blob under a second name", what)
				assert.Equal(t, os.FileMode(0o444), bfi.Mode().Perm(), "%s: blobs are read-only", what)
				if linked {
					assert.Equal(t, os.FileMode(0o444), ofi.Mode().Perm(), "%s: a linked output is read-only", what)
				} else {
					assert.Equal(t, os.FileMode(0o644), ofi.Mode().Perm(), "%s: a copied or cloned output keeps its mode", what)
				}
				disk := diskOfFiles(t, c.Dir, ws)
				if tc.shared {
					// Clones share their blocks too, which a per-file count
					// cannot see; a link is one inode.
					if linked {
						assert.Less(t, disk, int64(len(content))+int64(len(content))/2, "%s: one copy on disk", what)
					}
				} else {
					assert.GreaterOrEqual(t, disk, 2*int64(len(content)), "%s: two copies on disk", what)
				}
				got, err := os.ReadFile(out)
				require.NoError(t, err)
				assert.Equal(t, content, got, what)
			}
			check("stored")

			// A restore shares the blob the same way, and the stat cache
			// knows the result: no second read.
			require.NoError(t, os.Remove(out))
			require.NoError(t, c.MaterializeSize(d, out, 0o644, int64(len(content)), true))
			check("restored")
			reads := c.FileReads()
			got2, _, err := c.FileDigest(out)
			require.NoError(t, err)
			assert.Equal(t, d, got2)
			if tc.shared {
				assert.Equal(t, reads, c.FileReads(), "a restored output is known to the stat cache")
			}
		})
	}
}

// linkingCache opens a cache under a fresh root whose outputs under root
// share their blob's inode (links on, a file system that does not clone
// files; the test skips on one that does).
func linkingCache(t *testing.T) (*Cache, string) {
	t.Helper()
	t.Setenv(LinkEnv, "")
	root := t.TempDir()
	if clones(t, root) {
		t.Skip("this file system clones files: an output never shares its blob's inode here")
	}
	c, err := Open(filepath.Join(root, "cache"))
	require.NoError(t, err)
	return c, root
}

// TestEditedLinkIsNeverRestored: a write that gets through to a linked output
// (as root, or after a chmod) changes its blob; the blob's lost mark shows it,
// also once the output's name was replaced by another file, and it is
// dropped and never restored.
func TestEditedLinkIsNeverRestored(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		t.Run(map[bool]string{false: "name kept", true: "name replaced"}[replaced], func(t *testing.T) {
			c, root := linkingCache(t)
			out := filepath.Join(root, "ws", "big.bin")
			content := bytes.Repeat([]byte{7}, 300_000)
			d := publish(t, c, out, content)

			// The user makes the file writable and edits it in place.
			require.NoError(t, os.Chmod(out, 0o644))
			f, err := os.OpenFile(out, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("edited"), 1000)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			if replaced {
				// A rerun writes a new file there: the blob has one name left.
				require.NoError(t, WriteFileAtomic(out, content, 0o644))
			}
			reads := c.FileReads()
			assert.False(t, c.HasBlob(d), "the blob written through its link is dropped")
			assert.Equal(t, reads, c.FileReads())

			other := filepath.Join(root, "ws2", "big.bin")
			err = c.MaterializeSize(d, other, 0o644, int64(len(content)), true)
			require.ErrorIs(t, err, ErrNotFound)
			assert.NoFileExists(t, other, "nothing is restored from a changed blob")
		})
	}
}

// TestUnmarkedBlobIsReadOnce: a blob without its mark (stored by an older
// Rival, or touched) is read once; intact, it gets its mark and is kept.
func TestUnmarkedBlobIsReadOnce(t *testing.T) {
	c, err := Open(t.TempDir())
	require.NoError(t, err)
	d, err := c.PutBytes([]byte("an older blob"), false)
	require.NoError(t, err)
	p := c.blobPath(d, false)
	old := time.Unix(1_700_000_000, 0)
	require.NoError(t, os.Chtimes(p, old, old))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.False(t, marked(fi, d))
	assert.True(t, c.HasBlob(d))
	fi, err = os.Stat(p)
	require.NoError(t, err)
	assert.True(t, marked(fi, d), "an intact blob gets its mark")
	assert.Equal(t, old.Unix(), fi.ModTime().Unix(), "its seconds are kept")
}

// TestVerifyReportsEditedLink: cache:verify rehashes a linked blob like any
// other and drops it when an edit of its output reached it.
func TestVerifyReportsEditedLink(t *testing.T) {
	c, root := linkingCache(t)
	out := filepath.Join(root, "ws", "big.bin")
	d := publish(t, c, out, bytes.Repeat([]byte{9}, 200_000))
	require.NoError(t, os.Chmod(out, 0o644))
	require.NoError(t, os.WriteFile(out, []byte("edited in place"), 0o644))
	rep, err := c.Verify(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, []Digest{d}, rep.CorruptBlobs)
	assert.False(t, c.HasBlob(d), "the changed blob is dropped")
}

// TestOutputAcrossFileSystemsIsCopied: with the cache on a tmpfs and the
// workspace elsewhere, outputs are stored and restored as copies that keep
// their mode. The tmpfs is mounted in a private mount namespace of a child
// test process, as TestFullDisk does (RIVAL_REQUIRE_FULLDISK=1 makes a skip a
// failure).
func TestOutputAcrossFileSystemsIsCopied(t *testing.T) {
	mounttest.TmpfsNeed("16 MiB").Run(t, outputAcrossFileSystems)
}

func outputAcrossFileSystems(t *testing.T, dir string) {
	mounttest.Tmpfs(t, dir, "16m")
	t.Setenv(LinkEnv, "")
	c, err := Open(dir)
	require.NoError(t, err)
	ws := t.TempDir()
	wsDev, _ := devOf(ws)
	cacheDev, _ := devOf(dir)
	require.NotEqual(t, wsDev, cacheDev, "the workspace and the cache are on two file systems")
	out := filepath.Join(ws, "big.bin")
	content := bytes.Repeat([]byte("abc"), 200_000)
	d := publish(t, c, out, content)
	bfi, err := os.Stat(c.blobPath(d, false))
	require.NoError(t, err)
	ofi, err := os.Stat(out)
	require.NoError(t, err)
	assert.False(t, os.SameFile(bfi, ofi))
	assert.Equal(t, os.FileMode(0o644), ofi.Mode().Perm(), "a copied output keeps its mode")

	require.NoError(t, os.Remove(out))
	require.NoError(t, c.MaterializeSize(d, out, 0o640, int64(len(content)), true))
	ofi, err = os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), ofi.Mode().Perm(), "a restored copy gets its recorded mode")
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, content, got)
	entries, err := os.ReadDir(ws)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")
}

// reflinkNeed is what TestOutputSharesByClone needs; RIVAL_REQUIRE_REFLINK=1
// makes a skip a failure (.ci/run sets it).
var reflinkNeed = mounttest.Need{
	What:       "an XFS image: run it as root with xfsprogs installed (apt-get install xfsprogs)",
	RequireEnv: "RIVAL_REQUIRE_REFLINK",
}

// TestOutputSharesByClone: on a file system that clones files (XFS, mounted
// from an image in a private mount namespace of a child test process), an
// output and its blob are clones: independent files, so an edit of the
// output leaves the blob intact, and a restore is a clone with the recorded
// mode. Needs root (or a user namespace), loop devices and mkfs.xfs.
func TestOutputSharesByClone(t *testing.T) {
	if _, err := exec.LookPath("mkfs.xfs"); err != nil {
		reflinkNeed.Skip(t, "mkfs.xfs is not installed")
	}
	if os.Geteuid() != 0 {
		reflinkNeed.Skip(t, "not root")
	}
	reflinkNeed.Run(t, outputSharesByClone)
}

func outputSharesByClone(t *testing.T, dir string) {
	img := filepath.Join(t.TempDir(), "xfs.img")
	require.NoError(t, os.WriteFile(img, nil, 0o644))
	require.NoError(t, os.Truncate(img, 320<<20)) // XFS's smallest
	if out, err := exec.Command("mkfs.xfs", "-q", "-m", "reflink=1", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.xfs: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount an XFS image (loop devices?): %v %s", err, out)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	require.True(t, clones(t, dir), "XFS with reflink=1 clones files")
	t.Setenv(LinkEnv, "")
	c, err := Open(filepath.Join(dir, "cache"))
	require.NoError(t, err)
	out := filepath.Join(dir, "ws", "big.bin")
	content := bytes.Repeat([]byte("cloned "), 600_000) // 4.2 MB
	require.NoError(t, WriteFileAtomic(out, content, 0o644))
	free := func() int64 {
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(dir, &st))
		return int64(st.Bfree) * st.Bsize
	}
	want, err := WrittenID(out)
	require.NoError(t, err)
	syscall.Sync()
	before := free()
	d, _, _, err := c.PutPublished(out, false, true, want)
	require.NoError(t, err)
	syscall.Sync()
	assert.Less(t, before-free(), int64(len(content))/2, "the clone shares the output's blocks")
	blob := c.blobPath(d, false)
	bfi, err := os.Stat(blob)
	require.NoError(t, err)
	ofi, err := os.Stat(out)
	require.NoError(t, err)
	assert.False(t, os.SameFile(bfi, ofi), "a clone is a file of its own")
	assert.Equal(t, os.FileMode(0o644), ofi.Mode().Perm(), "a cloned output keeps its mode")

	// An edit in place leaves the blob as it was.
	f, err := os.OpenFile(out, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("edited"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := c.ReadBlob(d)
	require.NoError(t, err)
	assert.Equal(t, content, got, "the blob is untouched by an edit of its clone")

	require.NoError(t, os.Remove(out))
	require.NoError(t, c.MaterializeSize(d, out, 0o640, int64(len(content)), true))
	ofi, err = os.Stat(out)
	require.NoError(t, err)
	assert.False(t, os.SameFile(bfi, ofi))
	assert.Equal(t, os.FileMode(0o640), ofi.Mode().Perm(), "a restored clone gets its recorded mode")
	got, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, content, got)
}
