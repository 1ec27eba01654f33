package magecli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// NoteDelay is how long the targets may compile before CompileNote speaks: a warm build cache
// finishes well within it, so a no-op run prints nothing extra.
const NoteDelay = 3 * time.Second

// FirstCompile is how long the targets take to compile from an empty build cache with the modules
// downloaded, on the 2-core reference machine (docs/measurements.md, "Compiling the targets").
const FirstCompile = "about 30 seconds on 2 cores, longer while other work shares them"

// CompileNote says, once, that the targets are compiling when that is still going on after delay,
// so a first run in a new checkout (or after a Go upgrade) is not silent for minutes. Calling the
// returned stop before delay prints nothing; stop waits for a line being written.
func CompileNote(w io.Writer, delay time.Duration) (stop func()) {
	var mu sync.Mutex
	stopped := false
	t := time.AfterFunc(delay, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			fmt.Fprintf(w, "compiling Rival's targets: the first run in a checkout, or after a Go upgrade, takes %s; later runs start at once\n", FirstCompile)
		}
	})
	return func() {
		t.Stop()
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}
