//go:build !unix

package container

import "context"

// followWindowSize: without SIGWINCH the TTY keeps its initial size.
func (e *Engine) followWindowSize(ctx context.Context, id string, fd int) (stop func()) {
	return func() {}
}
