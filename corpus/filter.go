package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivalbench/rival/jsonl"
)

// FilterOptions are the thresholds a document must reach to be kept.
type FilterOptions struct {
	MinChars int // characters (Unicode code points) after trimming
	MinWords int // whitespace-separated words
}

// maxExamples bounds how many offending line numbers a report lists.
const maxExamples = 5

// FilterStats reports what Filter kept and dropped, and why.
type FilterStats struct {
	Read           int   `json:"read"`
	Kept           int   `json:"kept"`
	TooShort       int   `json:"too_short"`
	TooFewWords    int   `json:"too_few_words"`
	Malformed      int   `json:"malformed"`
	ShortLines     []int `json:"short_lines,omitempty"`
	FewWordsLines  []int `json:"few_words_lines,omitempty"`
	MalformedLines []int `json:"malformed_lines,omitempty"`
}

func note(lines []int, n int) []int {
	if len(lines) < maxExamples {
		return append(lines, n)
	}
	return lines
}

func fmtLines(lines []int, total int) string {
	if total == 0 {
		return ""
	}
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = fmt.Sprint(l)
	}
	more := ""
	if total > len(lines) {
		more = ", …"
	}
	return " (lines " + strings.Join(s, ", ") + more + ")"
}

// String is the one-paragraph report users see.
func (s FilterStats) String() string {
	return fmt.Sprintf("kept %d of %d documents; dropped %d under the character minimum%s, %d under the word minimum%s, %d malformed%s",
		s.Kept, s.Read,
		s.TooShort, fmtLines(s.ShortLines, s.TooShort),
		s.TooFewWords, fmtLines(s.FewWordsLines, s.TooFewWords),
		s.Malformed, fmtLines(s.MalformedLines, s.Malformed))
}

// ErrMalformed marks a line that is not a JSON object with a string "text".
var ErrMalformed = errors.New("malformed")

// DecodeText extracts the "text" string of one JSONL line, with the meaning
// the encode step (and Python's json.loads in preprocess_data.py) gives it:
// see jsonl.Text. Every failure wraps ErrMalformed.
func DecodeText(line []byte) (string, error) {
	text, err := jsonl.Text(line)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return text, nil
}

// Writer writes {"text": ...} lines.
type Writer struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewWriter writes JSONL documents to w; call Flush at the end.
func NewWriter(w io.Writer) *Writer {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &Writer{w: bw, enc: enc}
}

// Write appends one document.
func (w *Writer) Write(text string) error {
	return w.enc.Encode(struct {
		Text string `json:"text"`
	}{text})
}

// Flush writes buffered documents.
func (w *Writer) Flush() error { return w.w.Flush() }

// countWords counts runs of non-space characters.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// Filter copies documents from r to w, trimmed, dropping those under the
// thresholds and malformed lines. name labels errors.
func Filter(r io.Reader, w io.Writer, opt FilterOptions) (FilterStats, error) {
	var st FilterStats
	out := NewWriter(w)
	err := jsonl.ReadLines(r, func(n int, line []byte) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		st.Read++
		text, err := DecodeText(line)
		if err != nil {
			st.Malformed++
			st.MalformedLines = note(st.MalformedLines, n)
			return nil
		}
		text = strings.TrimSpace(text)
		switch {
		case utf8.RuneCountInString(text) < opt.MinChars:
			st.TooShort++
			st.ShortLines = note(st.ShortLines, n)
		case countWords(text) < opt.MinWords:
			st.TooFewWords++
			st.FewWordsLines = note(st.FewWordsLines, n)
		default:
			st.Kept++
			return out.Write(text)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	return st, out.Flush()
}
