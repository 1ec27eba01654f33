package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// TempMarker is the part of every temporary file name Rival's writers use
// beside an output: ".NAME" + TempMarker + "<pid>~<random>". No user names a
// file like that, and the pid says which process wrote it, so the debris
// sweep removes Rival's leftovers and nothing else.
const TempMarker = ".tmp-rival~"

// TempPattern is the os.CreateTemp pattern for a temporary file that will be
// renamed to base: hidden, marked, and carrying this process's id.
func TempPattern(base string) string {
	return "." + base + TempMarker + strconv.Itoa(os.Getpid()) + "~*"
}

// ParseTemp reports whether name is a temporary file a Rival writer created
// for base (as TempPattern makes them), and the id of the process that
// created it.
func ParseTemp(base, name string) (pid int, ok bool) {
	rest, ok := strings.CutPrefix(name, "."+base+TempMarker)
	if !ok {
		return 0, false
	}
	p, random, ok := strings.Cut(rest, "~")
	if !ok || !allDigits(p) || !allDigits(random) {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// WriterGone reports whether the process that created a temporary file is
// no longer running here, or is this process: only then may its file be
// removed as debris.
func WriterGone(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

// OutputID is the identity of an output's place: the device and inode of
// its folder, symlinks resolved, and its name there. Two spellings of one
// path (a checkout entered through a symlink, an output folder linked to a
// shared one, a bind mount) have one OutputID. The folder is created if
// missing.
func OutputID(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, base := filepath.Split(abs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	st, ok := statOf(fi)
	if !ok {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return "", err
		}
		return real + "/" + base, nil
	}
	return fmt.Sprintf("dir %d:%d/%s", st.Dev, st.Ino, base), nil
}

// RealPath is path made absolute with the symlinks of its folder resolved:
// one name for a file however it was reached, as records keep it for
// cache:verify.
func RealPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// published remembers, per output place, the file this process last
// renamed there: its device, inode, size and modification time, taken from
// the open file after the rename. A task's output is stored only if the
// file at its path is still that one.
var published struct {
	sync.Mutex
	m map[string]fileStat
}

// notePublishedInfo records that the file described by fi (taken from the
// open file, before or after its rename) was just renamed to path.
func notePublishedInfo(path string, fi os.FileInfo) {
	id, err := OutputID(path)
	if err != nil {
		return
	}
	st, ok := statOf(fi)
	if !ok {
		return
	}
	st.CtimeNS = 0 // a rename may change ctime; the inode says it all
	published.Lock()
	defer published.Unlock()
	if published.m == nil {
		published.m = map[string]fileStat{}
	}
	published.m[id] = st
}

// NotePublished records that the file described by fi, taken from the open
// file it was written through, was renamed to path by this process: for
// writers outside WriteAtomic, so a task stores exactly what it published.
func NotePublished(path string, fi os.FileInfo) { notePublishedInfo(path, fi) }

// republish updates what this process remembers of the file it published at
// path, when that is the file before described, to fi: for a change of its
// times that Rival made itself (a blob's mark).
func republish(path string, before fileStat, fi os.FileInfo) {
	id, err := OutputID(path)
	if err != nil {
		return
	}
	if st, ok := publishedAt(id); ok && contentID(st) == contentID(before) {
		notePublishedInfo(path, fi)
	}
}

func publishedAt(id string) (fileStat, bool) {
	published.Lock()
	defer published.Unlock()
	st, ok := published.m[id]
	return st, ok
}

// ErrChanged means an output is not the file this run wrote there, or
// changed while it was stored.
var ErrChanged = errors.New("changed since this run wrote it")

// ForgetPublished drops what this process remembers of the file last
// published at path; a task calls it before it runs, so that only its own
// writes count.
func ForgetPublished(path string) {
	id, err := OutputID(path)
	if err != nil {
		return
	}
	published.Lock()
	defer published.Unlock()
	delete(published.m, id)
}

// WrittenID is the identity of the file a task left at path: the file a
// writer in this process published there when one did, else the file there
// now. PutPublished stores path only while it still holds that file.
func WrittenID(path string) (string, error) {
	if id, err := OutputID(path); err == nil {
		if st, ok := publishedAt(id); ok {
			return contentID(st), nil
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, _ := statOf(fi)
	return contentID(st), nil
}

// contentID is a file's identity without its ctime, which a rename changes.
func contentID(st fileStat) string {
	return fmt.Sprintf("%d:%d:%d:%d", st.Dev, st.Ino, st.Size, st.MtimeNS)
}

func identity(st fileStat) string {
	return fmt.Sprintf("%d:%d:%d:%d:%d", st.Dev, st.Ino, st.Size, st.MtimeNS, st.CtimeNS)
}
