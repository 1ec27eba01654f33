// Package stackdiff lists what changed between two upstream trees of one framework that touches
// Rival's launches: options and config keys renamed, removed or added, defaults and types changed,
// deprecations, stock configurations changed, and the upstream files Rival's launches depend on,
// each with the file and line where it is. It compares the facts the extractors in frameworks/facts
// (and nemo/bridgecheck) write for each tree, so a move to a new release is read, not guessed.
package stackdiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Kinds of change.
const (
	Added      = "added"
	Removed    = "removed"
	Renamed    = "renamed"
	Moved      = "moved"
	Default    = "default changed"
	Type       = "type changed"
	Deprecated = "deprecated"
	Stock      = "stock config changed"
	File       = "file changed"
)

// Change is one difference between the old and the new tree.
type Change struct {
	Kind string `json:"kind"`
	// Area is where the name lives: "arguments", "pre_trainer.yaml", "[training]", "section train
	// (TrainingConfig)", "stock llama3.1_8B-BF16-pretrain.yaml", ...
	Area string `json:"area"`
	Name string `json:"name"`
	// NewName is a renamed name's new name.
	NewName string `json:"new_name,omitempty"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
	// Where is the file and line in the tree the change is read from (the new tree; the old one
	// for a removal), relative to the tree.
	Where string `json:"where,omitempty"`
	// Note says what the line at Where reads, for renames and deprecations.
	Note string `json:"note,omitempty"`
	// Touches is true when one of Rival's launches sets or reads the name.
	Touches bool `json:"touches_rival"`
}

// Report is the difference between two trees of one framework.
type Report struct {
	Framework string   `json:"framework"`
	Old       string   `json:"old"` // the old tree's release or commit, as its facts name it
	New       string   `json:"new"`
	Changes   []Change `json:"changes"`
}

func text(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Diff compares the items of the old and new facts, and finds in the trees where each change is.
// used holds the names Rival's launches set or read (keyed "area|name" or "|name" for any area).
func diffItems(framework, oldName, newName string, old, cur []item, oldTree, newTree *Tree, used map[string]bool) *Report {
	rep := &Report{Framework: framework, Old: oldName, New: newName}
	key := func(it item) string { return it.area + "\x00" + it.name }
	om, nm := map[string]item{}, map[string]item{}
	for _, it := range old {
		om[key(it)] = it
	}
	for _, it := range cur {
		nm[key(it)] = it
	}
	touches := func(it item) bool { return used[it.area+"|"+it.name] || used["|"+it.name] }
	var removed, added []item
	for _, k := range slices.Sorted(maps.Keys(om)) {
		o := om[k]
		n, ok := nm[k]
		if !ok {
			removed = append(removed, o)
			continue
		}
		for _, a := range slices.Sorted(maps.Keys(unionKeys(o.attrs, n.attrs))) {
			if o.attrs[a] == n.attrs[a] || a == "type" && normalizeType(o.attrs[a]) == normalizeType(n.attrs[a]) {
				continue
			}
			kind := Type
			switch {
			case a == "default":
				kind = Default
			case strings.HasPrefix(a, "stock"):
				kind = Stock
			}
			rep.Changes = append(rep.Changes, Change{Kind: kind, Area: o.area, Name: o.name + attrSuffix(a), Old: o.attrs[a], New: n.attrs[a],
				Where: newTree.locate(n.locate, n.name), Touches: touches(o)})
		}
		// A deprecation the new tree writes beside the definition, which the old did not.
		if w, line := newTree.near(n.locate, n.name, "deprecat"); w != "" {
			if ow, _ := oldTree.near(o.locate, o.name, "deprecat"); ow == "" {
				rep.Changes = append(rep.Changes, Change{Kind: Deprecated, Area: n.area, Name: n.name, Where: w, Note: line, Touches: touches(n)})
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(nm)) {
		if _, ok := om[k]; !ok {
			added = append(added, nm[k])
		}
	}
	// A removed name that the new tree still names beside an added one was renamed (Primus's
	// check that stops a run setting an old name; a changelog; a compatibility map).
	renamedTo := map[string]bool{}
	for _, r := range removed {
		c := Change{Kind: Removed, Area: r.area, Name: r.name, Old: r.attrs["default"], Where: oldTree.locate(r.locate, r.name), Touches: touches(r)}
		if a, ok := movedTo(r, added); ok {
			// The same name in another section: TorchTitan's [training] deterministic is [debug]'s.
			c.Kind, c.NewName, c.Where = Moved, a.area+" "+a.name, newTree.locate(a.locate, a.name)
			renamedTo[a.area+"\x00"+a.name] = true
		} else if where, line, to := newTree.renamed(r.name, renameCandidates(r, added)); to != "" {
			c.Kind, c.NewName, c.Where, c.Note = Renamed, to, where, line
			renamedTo[r.area+"\x00"+to] = true
		} else if where, line := newTree.mentions(r.name); where != "" {
			c.Note = "still named at " + where + ": " + line
		}
		rep.Changes = append(rep.Changes, c)
	}
	for _, a := range added {
		if renamedTo[a.area+"\x00"+a.name] {
			continue
		}
		rep.Changes = append(rep.Changes, Change{Kind: Added, Area: a.area, Name: a.name, New: a.attrs["default"],
			Where: newTree.locate(a.locate, a.name), Touches: touches(a)})
	}
	sort.SliceStable(rep.Changes, func(i, j int) bool {
		a, b := rep.Changes[i], rep.Changes[j]
		if a.Touches != b.Touches {
			return a.Touches
		}
		if a.Area != b.Area {
			return a.Area < b.Area
		}
		return a.Name < b.Name
	})
	return rep
}

// movedTo is the added item of r's name in another area, when there is exactly one.
func movedTo(r item, added []item) (item, bool) {
	var found []item
	for _, a := range added {
		if a.name == r.name && a.area != r.area {
			found = append(found, a)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return item{}, false
}

// renameCandidates are the added items a removed one may have been renamed to: in its area, with a
// name of several words (use_turbo_grouped_gemm, --foo-bar), so that a common word beside the old
// name ("rank", "debug") is not taken for its new name.
func renameCandidates(r item, added []item) []item {
	var out []item
	for _, a := range added {
		if a.area == r.area && a.name != r.name && strings.ContainsAny(strings.TrimLeft(a.name, "-"), "_-") {
			out = append(out, a)
		}
	}
	return out
}

func attrSuffix(a string) string {
	if a == "default" || a == "type" {
		return ""
	}
	if s, ok := strings.CutPrefix(a, "stock "); ok {
		return " (" + s + ")"
	}
	return " (" + a + ")"
}

func unionKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// Touching is the changes that touch Rival's launches.
func (r *Report) Touching() []Change {
	var out []Change
	for _, c := range r.Changes {
		if c.Touches {
			out = append(out, c)
		}
	}
	return out
}

// Markdown is the report for a person: the changes that touch Rival's launches first, in a table,
// then every other change.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# stack:diff %s: %s → %s\n\n", r.Framework, r.Old, r.New)
	touch := r.Touching()
	fmt.Fprintf(&b, "%d changes, %d of them touch Rival's launches.\n\n", len(r.Changes), len(touch))
	table := func(title string, cs []Change) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(&b, "## %s (%d)\n\n| change | where | name | old | new | file:line | note |\n|---|---|---|---|---|---|---|\n", title, len(cs))
		for _, c := range cs {
			name := c.Name
			if c.NewName != "" {
				name += " → " + c.NewName
			}
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s | %s | %s |\n", c.Kind, cell(c.Area), name, cell(short(c.Old)), cell(short(c.New)), cell(c.Where), cell(short(c.Note)))
		}
		b.WriteString("\n")
	}
	table("Touches Rival's launches", touch)
	var rest []Change
	for _, c := range r.Changes {
		if !c.Touches {
			rest = append(rest, c)
		}
	}
	table("Other changes", rest)
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func short(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// normalizeType writes a Python annotation's text one way: Optional[X] and Union[X, None] as
// "X | None", Union[A, B] as "A | B", so that a release that only respells its annotations
// (Megatron-Bridge 0.5) shows no change.
func normalizeType(s string) string {
	for _, head := range []string{"Optional[", "Union["} {
		for {
			i := strings.Index(s, head)
			if i < 0 {
				break
			}
			j, depth := i+len(head), 1
			for ; j < len(s) && depth > 0; j++ {
				switch s[j] {
				case '[':
					depth++
				case ']':
					depth--
				}
			}
			if depth != 0 {
				return s
			}
			inner := s[i+len(head) : j-1]
			parts := splitTop(inner)
			if head == "Optional[" {
				parts = append(parts, "None")
			}
			s = s[:i] + strings.Join(parts, " | ") + s[j:]
		}
	}
	return s
}

// splitTop splits s at the commas outside brackets, trimmed.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
