//go:build unix

package container

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// followWindowSize resizes the container's TTY whenever the terminal is
// resized (SIGWINCH), until the returned stop is called. The initial size
// goes in HostConfig.ConsoleSize.
func (e *Engine) followWindowSize(ctx context.Context, id string, fd int) (stop func()) {
	resize := func() {
		if w, h, err := term.GetSize(fd); err == nil {
			e.api.ContainerResize(ctx, id, uint(h), uint(w))
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sig:
				resize()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}
