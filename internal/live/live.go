// Package live draws one progress line that redraws in place on a terminal and, elsewhere (CI, a
// pipe, a log file), writes only its closing line, so a log holds one line per task.
package live

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Line is one task's progress line.
type Line struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	last  time.Time
	shown bool
}

// every throttles redraws on a terminal.
const every = 250 * time.Millisecond

// mu keeps two tasks' lines from interleaving mid-line.
var mu sync.Mutex

// terminal is a writer that says whether it shows what it is given as a terminal does: a pty
// wrapper, or a recorder of what a terminal would show.
type terminal interface {
	io.Writer
	IsTerminal() bool
}

// New is a line on w, timed by the wall clock.
func New(w io.Writer) *Line { return NewClocked(w, time.Now) }

// NewClocked is a line on w whose redraw throttle reads now: the clock of the work it follows.
func NewClocked(w io.Writer, now func() time.Time) *Line {
	return &Line{w: w, tty: isTerminal(w), now: now}
}

// isTerminal is true when w is a terminal: a *os.File on a tty, or a terminal that says so.
func isTerminal(w io.Writer) bool {
	switch f := w.(type) {
	case *os.File:
		return term.IsTerminal(int(f.Fd()))
	case terminal:
		return f.IsTerminal()
	}
	return false
}

// Update redraws the line on a terminal; elsewhere it does nothing.
func (l *Line) Update(s string) {
	if !l.tty {
		return
	}
	at := l.now()
	if at.Sub(l.last) < every {
		return
	}
	l.last = at
	mu.Lock()
	fmt.Fprintf(l.w, "\r\033[K  %s", s)
	mu.Unlock()
	l.shown = true
}

// Done writes the closing line (replacing the live one on a terminal).
func (l *Line) Done(s string) {
	mu.Lock()
	defer mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
	if s != "" {
		fmt.Fprintf(l.w, "  %s\n", s)
	}
}

// Clear removes the live line without a closing one.
func (l *Line) Clear() { l.Done("") }

// ETA is the time left at rate done/elapsed, "?" before any progress.
func ETA(done, total float64, elapsed time.Duration) string {
	if done <= 0 || total <= done {
		if total > 0 && done >= total {
			return "0s"
		}
		return "?"
	}
	left := time.Duration(float64(elapsed) * (total - done) / done)
	return left.Round(time.Second).String()
}
