package upkeep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rivalbench/rival/cache"
)

// dirMarkerName is the file Rival writes into an OUTPUT_DIR or DATA_DIR it
// creates: purge removes a directory only when it carries the marker, so a
// mistyped OUTPUT_DIR=.. or OUTPUT_DIR=.git never costs a project.
const dirMarkerName = ".rival-dir"

// dirMarker is a marker's content: which folder it marks, as which
// setting, for which workspace (all with symlinks resolved). A marker
// copied, planted or linked into another folder names the wrong one, and
// purge refuses it.
type dirMarker struct {
	Note      string `json:"note"`
	Key       string `json:"key"`
	Dir       string `json:"dir"`
	Workspace string `json:"workspace"`
}

const markerNote = "created by Rival; purge may remove this folder, and no other"

// MakeOwnDir creates dir, the folder of setting key (OUTPUT_DIR, DATA_DIR)
// in the workspace root, when it does not exist yet, and marks it as
// Rival's. A folder that exists is left as it is, marked or not: only a
// folder Rival created may carry the marker. It reports whether it created
// the folder, so that purge can tell a folder it was about to find empty
// because this very invocation made it.
func MakeOwnDir(dir, key, root string) bool {
	if _, err := os.Lstat(dir); err == nil {
		return false
	}
	if os.MkdirAll(dir, 0o755) != nil {
		return false
	}
	data, _ := json.MarshalIndent(dirMarker{Note: markerNote, Key: key, Dir: resolve(dir), Workspace: resolve(root)}, "", "  ")
	cache.WriteFileAtomic(filepath.Join(dir, dirMarkerName), append(data, '\n'), 0o644)
	return true
}

// checkMarker says why the marker in real (a resolved folder) does not
// make it Rival's k folder of the workspace root, or "" when it does: it
// must be a regular file (not a symlink) that Rival wrote, naming real and
// root.
func checkMarker(real, k, root string) string {
	p := filepath.Join(real, dirMarkerName)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "has no " + dirMarkerName + " marker (Rival marks the folders it creates; an older Rival did not)"
	case err != nil:
		return fmt.Sprintf("has an unreadable %s marker (%v)", dirMarkerName, err)
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("has a %s marker that is not a regular file (%s), which Rival never writes", dirMarkerName, fi.Mode().Type())
	}
	data, err := cache.ReadFileLimit(context.Background(), p, cache.LimitConfig)
	if err != nil {
		return fmt.Sprintf("has an unreadable %s marker (%v)", dirMarkerName, err)
	}
	var m dirMarker
	if json.Unmarshal(data, &m) != nil || m.Note != markerNote {
		return fmt.Sprintf("has a %s marker Rival did not write (an older Rival wrote one that names no folder)", dirMarkerName)
	}
	if m.Dir != real {
		return fmt.Sprintf("has a %s marker written for another folder (%s), copied or moved here", dirMarkerName, m.Dir)
	}
	if m.Workspace != root || m.Key != k {
		return fmt.Sprintf("has a %s marker written for %s of the workspace %s, not %s of %s", dirMarkerName, m.Key, m.Workspace, k, root)
	}
	return ""
}

// resolve is p made absolute with its symlinks resolved, as far as the
// path exists.
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// Resolve the existing parent, keep the missing tail.
	parent := resolve(filepath.Dir(abs))
	if parent == filepath.Dir(abs) && parent == abs {
		return abs
	}
	return filepath.Join(parent, filepath.Base(abs))
}
