// Package magecli is what `go run mage.go` does around mage: it rewrites
// the command line into mage's target names (train:slurm-script is mage's
// train:slurmscript; `purge data`, `verify:result A B`, `train:check
// PLATFORM`), lists targets in the spelling the README and messages use,
// and suggests a target for a mistyped one. Targets come from
// magefile.go itself, so the lists cannot drift from the targets.
package magecli

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
	"unicode"
)

// Target is one mage target as users type it ("train:slurm-script") and
// as mage lists it ("train:slurmScript").
type Target struct {
	Name   string // kebab-case, lower: what the README, messages and users type
	Listed string // mage's listing: namespace lower-cased, function lower-first
	// Params are the names of the arguments mage reads after the target (its Go parameters after
	// the context), in order: a command line must give exactly these.
	Params []string
}

// Usage is the target as its help writes it: "train:run PLATFORM FRAMEWORK MODEL".
func (t Target) Usage() string {
	words := []string{t.Name}
	for _, p := range t.Params {
		words = append(words, strings.ToUpper(p))
	}
	return strings.Join(words, " ")
}

// kebab is "SlurmScript" → "slurm-script".
func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// Targets reads the targets of a magefile (its source): every exported
// function, a namespace's methods as namespace:method, and the keys of
// its Aliases map, each with the parameters mage reads after it (an alias
// takes those of the function it names).
func Targets(src []byte) ([]Target, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "magefile.go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("read the targets of magefile.go: %w", err)
	}
	var out []Target
	params := map[string][]string{} // "Purge.Output" or "Demo": what an alias may name
	var aliases []*ast.KeyValueExpr
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			ps := paramNames(d.Type)
			if d.Recv == nil {
				params[d.Name.Name] = ps
				out = append(out, Target{Name: kebab(d.Name.Name), Listed: lowerFirst(d.Name.Name), Params: ps})
				continue
			}
			if id, ok := d.Recv.List[0].Type.(*ast.Ident); ok {
				params[id.Name+"."+d.Name.Name] = ps
				ns := strings.ToLower(id.Name)
				out = append(out, Target{Name: ns + ":" + kebab(d.Name.Name), Listed: ns + ":" + lowerFirst(d.Name.Name), Params: ps})
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "Aliases" || len(vs.Values) != 1 {
					continue
				}
				if cl, ok := vs.Values[0].(*ast.CompositeLit); ok {
					for _, e := range cl.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							aliases = append(aliases, kv)
						}
					}
				}
			}
		}
	}
	// Aliases last: the map may come before the functions it names.
	for _, kv := range aliases {
		lit, ok := kv.Key.(*ast.BasicLit)
		if !ok {
			continue
		}
		name := strings.Trim(lit.Value, "\"")
		out = append(out, Target{Name: name, Listed: name, Params: params[funcName(kv.Value)]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// paramNames are a target's parameters after its context.
func paramNames(ft *ast.FuncType) []string {
	var names []string
	for _, field := range ft.Params.List {
		if sel, ok := field.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Context" {
			continue
		}
		for _, n := range field.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

// funcName is what an alias names: "Purge.Output" for a method expression, "Demo" for a function.
func funcName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			return x.Name + "." + e.Sel.Name
		}
	}
	return ""
}

func isTarget(arg string, targets []Target) bool {
	a := strings.ToLower(arg)
	for _, t := range targets {
		if t.Name == a || strings.ReplaceAll(t.Name, "-", "") == a {
			return true
		}
	}
	return false
}

// Rewrite turns a command line as users type it into mage's: a kebab-case
// target (train:slurm-script) becomes mage's name (train:slurmscript);
// `purge data` is purge:data; `verify:result A.json B.json` is
// verify:results; `train:check PLATFORM [FRAMEWORK [MODEL]]` gets "all"
// for what is left out (mage cannot give a target optional arguments),
// taking as its arguments only words that are not themselves targets, so
// `train:check amd compare` checks amd and then runs compare.
func Rewrite(args []string, targets []Target) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "purge" && i+1 < len(args) && args[i+1] == "data":
			out = append(out, "purge:data")
			i++
		case a == "train:check":
			rest := []string{}
			for j := i + 1; j < len(args) && len(rest) < 3 && !strings.Contains(args[j], ":") && !strings.HasPrefix(args[j], "-") && !isTarget(args[j], targets); j++ {
				rest = append(rest, args[j])
			}
			i += len(rest)
			for len(rest) < 3 {
				rest = append(rest, "all")
			}
			out = append(append(out, "train:check"), rest...)
		case a == "verify:result" && i+2 < len(args) && strings.HasSuffix(args[i+2], ".json"):
			out = append(out, "verify:results", args[i+1], args[i+2])
			i += 2
		case strings.Contains(a, ":") && strings.Contains(a, "-") && !strings.HasPrefix(a, "-") && (len(targets) == 0 || isTarget(a, targets)):
			// Without the target list (magefile.go unreadable) a dashed
			// namespaced word is still taken for a target.
			out = append(out, strings.ReplaceAll(strings.ToLower(a), "-", ""))
		default:
			out = append(out, a)
		}
	}
	return out
}

// Suggest is the known target closest to a mistyped one (edit distance
// at most 3, or a unique prefix), "" when none is close.
func Suggest(typed string, targets []Target) string {
	typed = strings.ToLower(typed)
	best, bestD := "", 4
	for _, t := range targets {
		if d := distance(typed, t.Name); d < bestD {
			best, bestD = t.Name, d
		}
	}
	if best != "" {
		return best
	}
	var pre []string
	for _, t := range targets {
		if strings.HasPrefix(t.Name, typed) {
			pre = append(pre, t.Name)
		}
	}
	if len(pre) == 1 {
		return pre[0]
	}
	return ""
}

// distance is the Levenshtein distance of two strings.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// Listing rewrites mage's target listing (`-l`, `-h`) into the spelling
// users type: mage lists train:slurmScript, the README and every message
// say train:slurm-script.
func Listing(out string, targets []Target) string {
	lines := strings.SplitAfter(out, "\n")
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		for _, t := range targets {
			if t.Listed == t.Name || !strings.HasPrefix(trimmed, t.Listed) {
				continue
			}
			rest := trimmed[len(t.Listed):]
			if rest == "" || strings.ContainsRune(" \t*\n", rune(rest[0])) {
				// Keep the description's column: the name grew by its dashes.
				for d := len(t.Name) - len(t.Listed); d > 0 && strings.HasPrefix(rest, "  "); d-- {
					rest = rest[1:]
				}
				lines[i] = line[:len(line)-len(trimmed)] + t.Name + rest
				break
			}
		}
	}
	return strings.Join(lines, "")
}

// flagsWithValue are mage's flags that take the next argument as their value.
var flagsWithValue = map[string]bool{"-compile": true, "-d": true, "-w": true, "-t": true, "-gocmd": true, "-goos": true, "-goarch": true, "-ldflags": true}

// boolFlags are mage's flags that take no value.
var boolFlags = map[string]bool{"-v": true, "-l": true, "-h": true, "-help": true, "-debug": true, "-f": true, "-keep": true,
	"-version": true, "-init": true, "-clean": true}

// Unknown checks the first target of a command line (as users type it)
// against the targets: for a mistyped one it returns the message to print,
// with the closest target, and true. Listing and help flags are never
// unknown.
func Unknown(args []string, targets []Target) (string, bool) {
	if len(targets) == 0 {
		return "", false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-l" || a == "-h" || a == "-help" || a == "--help" || a == "-version" || a == "-init" || a == "-clean":
			return "", false
		case flagsWithValue[a]:
			i++
			continue
		case strings.HasPrefix(a, "-"):
			continue
		}
		if isTarget(a, targets) || a == "purge" {
			return "", false
		}
		return fmt.Sprintf("Unknown target specified: %q\n%s\n", a, suggestion(a, targets)), true
	}
	return "", false
}

func suggestion(typed string, targets []Target) string {
	if s := Suggest(typed, targets); s != "" {
		return fmt.Sprintf("did you mean %s? (go run mage.go -l lists every target)", s)
	}
	return "go run mage.go -l lists every target"
}

// Listed says whether a command line asks for mage's listing or help.
func Listed(args []string) bool {
	for _, a := range args {
		if a == "-l" || a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}

// Call is one target of a command line with the arguments mage hands it.
type Call struct {
	Target Target
	Args   []string
}

// Command is a command line as mage will run it: its flags, then its targets in order.
type Command struct {
	Flags map[string]string // "-v": "", "-compile": "rival"
	Calls []Call
}

// Parse reads a command line as users type it after `go run mage.go` the way mage runs it once
// Rewrite has spelt it mage's way: flags first, then each target followed by exactly its
// arguments. An unknown flag or target, a flag after the first target, or a target with too few
// arguments is an error that names the word and what the target takes, so a command line can be
// checked without compiling the targets.
func Parse(args []string, targets []Target) (Command, error) {
	cmd := Command{Flags: map[string]string{}}
	if len(targets) == 0 {
		return cmd, errors.New("no targets to check the command line against: magefile.go could not be read")
	}
	rw := Rewrite(args, targets)
	i := 0
	for ; i < len(rw) && strings.HasPrefix(rw[i], "-"); i++ {
		name, value, hasValue := strings.Cut(rw[i], "=")
		name = "-" + strings.TrimLeft(name, "-")
		switch {
		case boolFlags[name]:
			cmd.Flags[name] = value
		case flagsWithValue[name] && hasValue:
			cmd.Flags[name] = value
		case flagsWithValue[name]:
			if i+1 >= len(rw) {
				return cmd, fmt.Errorf("mage's flag %s needs a value", name)
			}
			i++
			cmd.Flags[name] = rw[i]
		default:
			return cmd, fmt.Errorf("%s is not one of mage's flags (-v, -l, -h, -compile PATH, ...)", rw[i])
		}
	}
	for i < len(rw) {
		word := rw[i]
		if strings.HasPrefix(word, "-") {
			return cmd, fmt.Errorf("flag %s after the target %s: mage reads flags only before the first target", word, cmd.Calls[len(cmd.Calls)-1].Target.Name)
		}
		t, ok := lookup(word, targets)
		if !ok {
			if n := len(cmd.Calls); n > 0 {
				last := cmd.Calls[n-1].Target
				return cmd, fmt.Errorf("%q is not a target, and %s takes %s: %s", word, last.Name, english(len(last.Params)), last.Usage())
			}
			return cmd, fmt.Errorf("unknown target %q; %s", word, suggestion(word, targets))
		}
		i++
		if len(rw)-i < len(t.Params) {
			return cmd, fmt.Errorf("%s takes %s (%s), given %d", t.Name, english(len(t.Params)), t.Usage(), len(rw)-i)
		}
		cmd.Calls = append(cmd.Calls, Call{Target: t, Args: rw[i : i+len(t.Params)]})
		i += len(t.Params)
	}
	return cmd, nil
}

// lookup finds the target a word of a rewritten command line names: mage matches names without
// their dashes and in any case.
func lookup(word string, targets []Target) (Target, bool) {
	w := strings.ToLower(word)
	for _, t := range targets {
		if t.Name == w || strings.ReplaceAll(t.Name, "-", "") == w || strings.ToLower(t.Listed) == w {
			return t, true
		}
	}
	return Target{}, false
}

func english(n int) string {
	switch n {
	case 0:
		return "no arguments"
	case 1:
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}
