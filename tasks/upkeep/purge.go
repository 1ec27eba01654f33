package upkeep

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rivalbench/rival/internal/units"
)

// Folder is a folder purge is asked to remove: its setting (OUTPUT_DIR,
// DATA_DIR), the setting's value as configured (for messages) and the path
// that value names in the workspace. Fresh says the invocation running the
// purge created it (every target makes OUTPUT_DIR and DATA_DIR first), so
// an empty one did not exist before the purge was asked for.
type Folder struct {
	Key, Value, Path string
	Fresh            bool
}

// within reports whether p lies strictly inside dir (both resolved).
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != "." && r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r)
}

// Purge removes folders of the workspace root, saying what to out. The
// cache (cacheDir) stays: a later run materializes from it. A directory is
// removed only when it is not reached through a symlink and carries a
// marker Rival wrote naming it and this workspace (MakeOwnDir); never the
// workspace, one that holds it or the cache, the home folder, a filesystem
// root, one that holds a .git anywhere inside, or one holding files git
// tracks. Every folder is checked before any is removed, and what will go
// is listed first.
func Purge(out io.Writer, root, cacheDir string, folders []Folder) error {
	root = resolve(root)
	cacheDir = resolve(cacheDir)
	home := ""
	if h, err := os.UserHomeDir(); err == nil {
		home = resolve(h)
	}
	type victim struct {
		key, real, dir string
		fresh          bool
		files, folders int
		bytes          int64
		top            []string
	}
	var victims []victim
	// Check every directory before removing any.
	for _, f := range folders {
		k, d := f.Key, f.Path
		real := resolve(d)
		refuse := func(why string, args ...any) error {
			return fmt.Errorf("purge: %s=%s resolves to %s, which %s; refusing", k, f.Value, real, fmt.Sprintf(why, args...))
		}
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(out, "purge: %s (%s) does not exist; nothing to remove\n", k, d)
			continue
		}
		if err != nil {
			return fmt.Errorf("purge: %s: %w", d, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return refuse("is reached through the symlink %s; purge never follows symlinks (remove the link with rm, or set %s to the folder itself)", d, k)
		}
		switch {
		case real == root || within(real, root):
			return refuse("holds the workspace %s (set %s to a directory of its own)", root, k)
		case real == cacheDir || within(real, cacheDir):
			return refuse("holds the cache %s (use cache:trim for the cache)", cacheDir)
		case filepath.Dir(real) == real:
			return refuse("is a filesystem root")
		case home != "" && real == home:
			return refuse("is the home folder")
		case home != "" && within(real, home):
			return refuse("holds the home folder %s", home)
		case filepath.Base(real) == ".git":
			return refuse("is a git repository (set %s to a directory of its own)", k)
		}
		if tracked := gitTracked(real); tracked != "" {
			return refuse("holds %s that git tracks (set %s to a directory of its own)", tracked, k)
		}
		if why := checkMarker(real, k, root); why != "" {
			return refuse("%s: if it holds only Rival's outputs, remove it by hand with: rm -rf %q", why, real)
		}
		v := victim{key: k, real: real, dir: d, fresh: f.Fresh}
		err = filepath.WalkDir(real, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.Name() == ".git" {
				return fmt.Errorf("%s is a git repository or worktree", p)
			}
			if p == real {
				return nil
			}
			if filepath.Dir(p) == real && de.Name() != dirMarkerName {
				name := de.Name()
				if de.IsDir() {
					name += "/"
				}
				v.top = append(v.top, name)
			}
			if de.IsDir() {
				v.folders++
			} else if p == filepath.Join(real, dirMarkerName) {
				// Rival's own marker is not something the user kept there.
			} else if info, err := de.Info(); err == nil {
				v.files++
				if info.Mode().IsRegular() {
					v.bytes += info.Size()
				}
			}
			return nil
		})
		if err != nil {
			return refuse("holds something Rival never writes (%v): move it out first, or remove the folder by hand", err)
		}
		victims = append(victims, v)
	}
	for _, v := range victims {
		list := strings.Join(v.top, ", ")
		if len(v.top) > 12 {
			list = strings.Join(v.top[:12], ", ") + fmt.Sprintf(" and %d more", len(v.top)-12)
		}
		if len(v.top) == 0 {
			if err := os.RemoveAll(v.real); err != nil {
				return fmt.Errorf("purge %s: %w", v.real, err)
			}
			if v.fresh {
				// Made moments ago by this invocation: to the user it never existed.
				fmt.Fprintf(out, "purge: %s (%s) does not exist; nothing to remove\n", v.key, v.dir)
			} else {
				fmt.Fprintf(out, "purge: %s (%s) held nothing to remove; removed the empty folder\n", v.key, v.real)
			}
			continue
		}
		fmt.Fprintf(out, "purge: removing %s %s: %d files in %d folders, %s: %s\n", v.key, v.real, v.files, v.folders, units.Bytes(v.bytes), list)
		// RemoveAll removes symlinks inside, never what they point to.
		if err := os.RemoveAll(v.real); err != nil {
			return fmt.Errorf("purge %s: %w", v.real, err)
		}
		fmt.Fprintf(out, "purge: removed %s\n", v.real)
	}
	return nil
}

// gitTracked returns a file git tracks under dir, or "" when there is none
// or git is not installed (the marker rule then decides alone).
func gitTracked(dir string) string {
	if _, err := exec.LookPath("git"); err != nil {
		return ""
	}
	cmd := exec.Command("git", "-C", dir, "ls-files", "-z", "--", ".")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		return ""
	}
	first, _, _ := strings.Cut(string(out), "\x00")
	return filepath.Join(dir, first)
}
