// Package docexamples finds the command lines of Markdown pages that run Rival: `go run mage.go
// ...`, with any leading VAR=value assignments, on a line of a shell code block (```sh, ```bash,
// or a block without a language) or as an inline code span. The docs examples test (package
// tasks) checks every one against the targets and settings and runs those a CPU can.
package docexamples

import (
	"fmt"
	"regexp"
	"strings"
)

// Assignment is one VAR=value word in front of a command, or in an `export` line.
type Assignment struct{ Name, Value string }

// Example is one command line that runs Rival.
type Example struct {
	File   string // the page, as given to Extract
	Line   int    // where the command starts, from 1
	Text   string // the command as written, a continued line joined
	Inline bool   // an inline code span, not a code block line
	Block  int    // the code block it is in, from 1 in each page; 0 for an inline span
	// Export are the `export` lines before it in its code block: the shell it runs in has them.
	Export []Assignment
	Env    []Assignment // the VAR=value words in front of the command
	Args   []string     // the words after `go run mage.go`
	Stdout string       // the file of a `> FILE` redirection, "" without one
}

// Name is the example's stable name: page and line.
func (e Example) Name() string { return fmt.Sprintf("%s:%d", e.File, e.Line) }

// Template says whether the example stands for a family of commands rather than one: a word
// after mage.go is `...` or <like-this>. Such an example has no target to check.
func (e Example) Template() bool {
	if angled.MatchString(e.Text) {
		return true
	}
	for _, a := range e.Args {
		if a == "..." || a == "…" {
			return true
		}
	}
	return false
}

// angled is a word to fill in, written <like-this>; the shell would read it as redirections.
var angled = regexp.MustCompile(`<[A-Za-z][A-Za-z_-]*>`)

// placeholder is an argument written in capitals for the user to fill in: PLATFORM,
// REGISTRY/REPOSITORY[:TAG], A.json, LOG. A lower-case file extension does not count.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_/\[\]:@.-]*?(\.[a-z]+)?$`)

// Placeholder says whether an argument is one the user fills in.
func Placeholder(arg string) bool { return placeholder.MatchString(arg) }

// Problem is a line that tries to run Rival in a way the README does not set up.
type Problem struct {
	File string
	Line int
	Text string
	Why  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Text, p.Why) }

// shellLangs are the code blocks read as shell sessions.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// Extract finds every example of one page, in page order, and the lines that run a mage binary
// (which the README never installs) or say `go run mage` without the `.go`.
func Extract(file string, src []byte) ([]Example, []Problem) {
	var out []Example
	var problems []Problem
	lines := strings.Split(string(src), "\n")
	inBlock, shell, block := false, false, 0
	var fence string
	var export []Assignment
	var prose []proseLine
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if inBlock {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				inBlock = false
				continue
			}
			if !shell {
				continue
			}
			// A line continued with a backslash is one command.
			start, text := i+1, trimmed
			for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
				i++
				text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(lines[i])
			}
			text = strings.TrimPrefix(text, "$ ")
			for _, cmd := range commands(text) {
				if len(cmd.words) > 0 && cmd.words[0] == "export" {
					for _, w := range cmd.words[1:] {
						if a, ok := assignment(w); ok {
							export = append(export, a)
						}
					}
					continue
				}
				ex, p := classify(file, start, text, cmd)
				if p != nil {
					problems = append(problems, *p)
				}
				if ex != nil {
					ex.Block = block
					ex.Export = append([]Assignment(nil), export...)
					out = append(out, *ex)
				}
			}
			continue
		}
		if f := fenceOf(trimmed); f != "" {
			inBlock, fence, block, export = true, f, block+1, nil
			lang := strings.Fields(strings.TrimLeft(trimmed, "`~") + " ")
			shell = len(lang) == 0 || shellLangs[lang[0]]
			continue
		}
		prose = append(prose, proseLine{i + 1, lines[i]})
	}
	for _, span := range spans(prose) {
		for _, cmd := range commands(span.text) {
			ex, p := classify(file, span.line, span.text, cmd)
			if p != nil {
				problems = append(problems, *p)
			}
			// `go run mage.go` alone in prose names the command; it is not an example.
			if ex != nil && len(ex.Args) > 0 {
				ex.Inline = true
				out = append(out, *ex)
			}
		}
	}
	sortByLine(out)
	return out, problems
}

// fenceOf is the fence a line opens (``` or ~~~, three or more), "" when it opens none.
func fenceOf(trimmed string) string {
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

func sortByLine(xs []Example) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j].Line < xs[j-1].Line; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

type proseLine struct {
	line int
	text string
}

type span struct {
	line int
	text string
}

// spans are the inline code spans of the prose: a run of backticks up to the next run of the same
// length, across a line break but not a blank line.
func spans(prose []proseLine) []span {
	var out []span
	for i := 0; i < len(prose); i++ {
		text := prose[i].text
		for pos := 0; pos < len(text); {
			open := strings.IndexByte(text[pos:], '`')
			if open < 0 {
				break
			}
			open += pos
			n := len(text[open:]) - len(strings.TrimLeft(text[open:], "`"))
			tick := strings.Repeat("`", n)
			body, rest := text[open+n:], ""
			end := indexRun(body, tick)
			joined := 0
			for end < 0 && i+joined+1 < len(prose) && prose[i+joined+1].line == prose[i+joined].line+1 && strings.TrimSpace(prose[i+joined+1].text) != "" {
				joined++
				body += " " + prose[i+joined].text
				end = indexRun(body, tick)
			}
			if end < 0 {
				break
			}
			out = append(out, span{prose[i].line, strings.TrimSpace(body[:end])})
			if joined > 0 {
				// The rest of the last joined line is read as its own line.
				rest = body[end+n:]
				i += joined
				text, pos = rest, 0
				continue
			}
			pos = open + n + end + n
		}
	}
	return out
}

// indexRun is where a run of exactly len(tick) backticks starts in s, -1 when none.
func indexRun(s, tick string) int {
	for from := 0; from < len(s); {
		k := strings.Index(s[from:], tick)
		if k < 0 {
			return -1
		}
		k += from
		after := k + len(tick)
		if (k == 0 || s[k-1] != '`') && (after >= len(s) || s[after] != '`') {
			return k
		}
		from = after
		for from < len(s) && s[from] == '`' {
			from++
		}
	}
	return -1
}

// command is one simple command of a line: its words and where its standard output goes.
type command struct {
	words  []string
	stdout string
}

// commands splits a shell line into its simple commands (at ;, &&, ||, |), dropping a comment.
// Quotes and backslashes are read as the shell reads them; $(...) is kept as written.
func commands(line string) []command {
	var out []command
	var cur command
	var word strings.Builder
	inWord, redirect, otherFD := false, false, false
	flush := func() {
		if !inWord {
			return
		}
		if redirect {
			if !otherFD {
				cur.stdout = word.String()
			}
			redirect, otherFD = false, false
		} else {
			cur.words = append(cur.words, word.String())
		}
		word.Reset()
		inWord = false
	}
	end := func() {
		flush()
		if len(cur.words) > 0 {
			out = append(out, cur)
		}
		cur = command{}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '\\' && i+1 < len(line):
			word.WriteByte(line[i+1])
			inWord = true
			i++
		case c == '$' && strings.HasPrefix(line[i:], "$("):
			j := strings.IndexByte(line[i:], ')')
			if j < 0 {
				j = len(line) - i - 1
			}
			word.WriteString(line[i : i+j+1])
			inWord = true
			i += j
		case c == '#' && !inWord:
			end()
			return out
		case c == ' ' || c == '\t':
			flush()
		case c == '>':
			// A descriptor before it (2>file, 2>&1) is part of the redirection, not a word.
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				otherFD = word.String() != "1"
				word.Reset()
				inWord = false
			}
			flush()
			if i+1 < len(line) && line[i+1] == '>' {
				i++
			}
			if i+1 < len(line) && line[i+1] == '&' {
				// >&1: onto another descriptor, no file follows.
				i++
				for i+1 < len(line) && line[i+1] >= '0' && line[i+1] <= '9' {
					i++
				}
				otherFD = false
				continue
			}
			redirect = true
		case c == ';' || c == '|' || c == '&':
			if c != ';' && i+1 < len(line) && line[i+1] == c {
				i++
			}
			end()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	end()
	return out
}

var assignmentRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

func assignment(word string) (Assignment, bool) {
	m := assignmentRE.FindStringSubmatch(word)
	if m == nil {
		return Assignment{}, false
	}
	return Assignment{Name: m[1], Value: m[2]}, true
}

// classify reads one command: an example when it runs `go run mage.go`, a problem when it runs a
// mage binary or `go run mage` (no such file), nothing otherwise.
func classify(file string, line int, text string, cmd command) (*Example, *Problem) {
	w := cmd.words
	var env []Assignment
	for len(w) > 0 {
		a, ok := assignment(w[0])
		if !ok {
			break
		}
		env = append(env, a)
		w = w[1:]
	}
	// time, or /usr/bin/time with its options, measures the command after it.
	if len(w) > 0 && (w[0] == "time" || strings.HasSuffix(w[0], "/time")) {
		w = w[1:]
		for len(w) > 0 && strings.HasPrefix(w[0], "-") {
			takesValue := w[0] == "-f" || w[0] == "-o" || w[0] == "--format" || w[0] == "--output"
			w = w[1:]
			if takesValue && len(w) > 0 {
				w = w[1:]
			}
		}
	}
	switch {
	case len(w) >= 3 && w[0] == "go" && w[1] == "run" && w[2] == "mage.go":
		return &Example{File: file, Line: line, Text: text, Env: env, Args: w[3:], Stdout: cmd.stdout}, nil
	case len(w) >= 2 && w[0] == "mage" && (len(env) > 0 || strings.Contains(w[1], ":") || strings.HasPrefix(w[1], "-") || len(w) == 2):
		return nil, &Problem{file, line, text, "runs a mage binary, which the README never installs: write `go run mage.go " + strings.Join(w[1:], " ") + "`"}
	case len(w) >= 3 && w[0] == "go" && w[1] == "run" && w[2] == "mage":
		return nil, &Problem{file, line, text, "`go run mage` names no file: write `go run mage.go`"}
	}
	return nil, nil
}
