package training

import (
	"bytes"
	"path/filepath"
	"sort"
)

// workspacePlaceholder stands for the workspace's location in what enters
// a key.
const workspacePlaceholder = "${RIVAL_WORKSPACE}"

// workspaceRelative writes every mention of the workspace root in data
// (its path as given and with symlinks resolved) as workspacePlaceholder,
// so a launch (whose paths on the host are absolute) keys alike in every
// checkout of one workspace: two checkouts on one cache share their runs,
// and paths outside the workspace still count as they are.
func workspaceRelative(data []byte, root string) []byte {
	spellings := []string{root}
	if abs, err := filepath.Abs(root); err == nil {
		spellings = append(spellings, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			spellings = append(spellings, real)
		}
	}
	// Longest first, so a spelling that extends another is replaced whole.
	sort.Slice(spellings, func(i, j int) bool { return len(spellings[i]) > len(spellings[j]) })
	for _, sp := range spellings {
		if sp == "" || sp == "/" || sp == "." {
			continue
		}
		data = replacePathPrefix(data, sp, workspacePlaceholder)
	}
	return data
}

// replacePathPrefix replaces the path p in data where it starts a path (at
// the start of a JSON string, or after "=", ":", "," or a space, as in
// "--data-path=P/x" or "PYTHONPATH=a:P/x") and ends one (before "/" or the
// end of the string): never inside a longer path ("/b/ws/x") or a longer
// name ("/ws2").
func replacePathPrefix(data []byte, p, with string) []byte {
	var out []byte
	for {
		i := bytes.Index(data, []byte(p))
		if i < 0 {
			return append(out, data...)
		}
		end := i + len(p)
		startsPath := i == 0 || bytes.IndexByte([]byte(`"=:, `), data[i-1]) >= 0
		endsPath := end < len(data) && (data[end] == '/' || data[end] == '"')
		out = append(out, data[:i]...)
		if startsPath && endsPath {
			out = append(out, with...)
		} else {
			out = append(out, p...)
		}
		data = data[end:]
	}
}
