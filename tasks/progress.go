package tasks

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// liveLine shows a long step's progress. On a terminal it is one line
// redrawn in place (at most every liveEvery); elsewhere (CI, a pipe, a log
// file) updates are dropped and only the closing line is written, so a log
// has one line per task.
type liveLine struct {
	w     io.Writer
	tty   bool
	last  time.Time
	shown bool
}

// liveEvery throttles redraws on a terminal.
const liveEvery = 250 * time.Millisecond

// liveMu keeps two tasks' lines from interleaving mid-line.
var liveMu sync.Mutex

func newLiveLine(w io.Writer) *liveLine {
	return &liveLine{w: w, tty: isTerminal(w)}
}

// isTerminal is true when w is a terminal (a *os.File on a tty).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Update redraws the line on a terminal; elsewhere it does nothing.
func (l *liveLine) Update(s string) {
	if !l.tty || time.Since(l.last) < liveEvery {
		return
	}
	l.last = time.Now()
	liveMu.Lock()
	fmt.Fprintf(l.w, "\r\033[K  %s", s)
	liveMu.Unlock()
	l.shown = true
}

// Done writes the closing line (replacing the live one on a terminal).
func (l *liveLine) Done(s string) {
	liveMu.Lock()
	defer liveMu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
	if s != "" {
		fmt.Fprintf(l.w, "  %s\n", s)
	}
}

// Clear removes the live line without a closing one.
func (l *liveLine) Clear() { l.Done("") }

// eta is the time left at rate done/elapsed, "?" before any progress.
func eta(done, total float64, elapsed time.Duration) string {
	if done <= 0 || total <= done {
		if total > 0 && done >= total {
			return "0s"
		}
		return "?"
	}
	left := time.Duration(float64(elapsed) * (total - done) / done)
	return left.Round(time.Second).String()
}
