package stackdiff

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// item is one named entry of a facts document, with the attributes compared.
type item struct {
	area, name string
	attrs      map[string]string // "default", "type", ... as text
	locate     locator           // how to find its definition in a tree
}

// locator finds an item's definition line in a tree: the files (glob patterns relative to the tree)
// and the line's pattern, with %s for the name.
type locator struct {
	globs   []string
	pattern string
}

// Tree is an upstream checkout, read once: its text files' lines, source before tests.
type Tree struct {
	Root  string
	files []treeFile
}

type treeFile struct {
	rel   string
	lines []string
}

// scanned are the files a tree's names are looked for in.
var scanned = map[string]bool{".py": true, ".yaml": true, ".yml": true, ".sh": true, ".toml": true}

// ReadTree reads the text files under root and the folders after it (Python, YAML, shell, TOML),
// each file by its path under its own folder (Megatron-Bridge's src/..., Megatron-LM's megatron/...).
func ReadTree(root string, more ...string) (*Tree, error) {
	t := &Tree{Root: root}
	for _, r := range append([]string{root}, more...) {
		if r == "" {
			continue
		}
		if err := t.read(r); err != nil {
			return nil, err
		}
	}
	if len(t.files) == 0 {
		return nil, fmt.Errorf("stack diff: %s holds no Python, YAML, shell or TOML file: name an upstream checkout", root)
	}
	// Source first, then tests, each in path order: the first mention found is the source's.
	sort.SliceStable(t.files, func(i, j int) bool {
		ti, tj := isTest(t.files[i].rel), isTest(t.files[j].rel)
		if ti != tj {
			return !ti
		}
		return t.files[i].rel < t.files[j].rel
	})
	return t, nil
}

func (t *Tree) read(root string) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !scanned[filepath.Ext(p)] {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		t.files = append(t.files, treeFile{rel: filepath.ToSlash(rel), lines: strings.Split(string(b), "\n")})
		return nil
	})
	if err != nil {
		return fmt.Errorf("stack diff: reading %s: %w", root, err)
	}
	return nil
}

func isTest(rel string) bool {
	return strings.HasPrefix(rel, "tests/") || strings.Contains(rel, "/tests/") || strings.Contains(rel, "/test_") || strings.HasPrefix(rel, "test_")
}

func (t *Tree) matching(globs []string) []treeFile {
	var out []treeFile
	for _, f := range t.files {
		for _, g := range globs {
			if ok, _ := filepath.Match(g, f.rel); ok {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// locate is the file:line of name's definition (the first line matching l's pattern in l's files),
// or "".
func (t *Tree) locate(l locator, name string) string {
	f, i := t.definition(l, name)
	if f == nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", f.rel, i+1)
}

func (t *Tree) definition(l locator, name string) (*treeFile, int) {
	if t == nil || l.pattern == "" {
		return nil, 0
	}
	re, err := regexp.Compile(fmt.Sprintf(l.pattern, regexp.QuoteMeta(name)))
	if err != nil {
		return nil, 0
	}
	fs := t.matching(l.globs)
	for k := range fs {
		for i, line := range fs[k].lines {
			if re.MatchString(line) {
				return &fs[k], i
			}
		}
	}
	return nil, 0
}

// near finds word (case-insensitive) on the definition's line or the four after it (a field's
// docstring, a help text): its file:line and the line, or "".
func (t *Tree) near(l locator, name, word string) (string, string) {
	f, i := t.definition(l, name)
	if f == nil {
		return "", ""
	}
	for j := i; j < min(i+5, len(f.lines)); j++ {
		if strings.Contains(strings.ToLower(f.lines[j]), word) {
			return fmt.Sprintf("%s:%d", f.rel, j+1), strings.TrimSpace(f.lines[j])
		}
	}
	return "", ""
}

func wordRe(name string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `([^A-Za-z0-9_]|$)`)
}

// renamed looks for a line of the tree that names old together with one of the added items: on
// the same line first ("x has been removed; please use y instead"), else within three lines. It
// returns the new name, where, and the line that names it.
func (t *Tree) renamed(old string, added []item) (where, line, to string) {
	if t == nil || len(added) == 0 {
		return "", "", ""
	}
	re := wordRe(old)
	var res []*regexp.Regexp
	for _, a := range added {
		res = append(res, wordRe(a.name))
	}
	for _, window := range []int{0, 3} {
		for _, f := range t.files {
			for i, l := range f.lines {
				if !strings.Contains(l, old) || !re.MatchString(l) {
					continue
				}
				for j := max(0, i-window); j < min(len(f.lines), i+window+1); j++ {
					for k, a := range added {
						if strings.Contains(f.lines[j], a.name) && res[k].MatchString(f.lines[j]) {
							return fmt.Sprintf("%s:%d", f.rel, j+1), strings.TrimSpace(f.lines[j]), a.name
						}
					}
				}
			}
		}
	}
	return "", "", ""
}

// mentions is the first line of the tree that names name, or "".
func (t *Tree) mentions(name string) (string, string) {
	if t == nil {
		return "", ""
	}
	re := wordRe(name)
	for _, f := range t.files {
		for i, l := range f.lines {
			if strings.Contains(l, name) && re.MatchString(l) {
				return fmt.Sprintf("%s:%d", f.rel, i+1), strings.TrimSpace(l)
			}
		}
	}
	return "", ""
}

// lines is the text of rel in the tree, or nil.
func (t *Tree) lines(rel string) []string {
	if t == nil {
		return nil
	}
	for _, f := range t.files {
		if f.rel == rel {
			return f.lines
		}
	}
	return nil
}
