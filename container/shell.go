package container

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/moby/moby/api/pkg/stdcopy"
	"golang.org/x/term"
)

// Shell runs spec as an interactive container on this process's stdin,
// stdout and stderr: with a TTY (raw mode, window size followed) when stdin
// is a terminal, with plain pipes otherwise. The container gets the same
// devices, mounts and environment as Run would give it and is removed when
// the shell exits or ctx ends. It returns the shell's exit code.
//
// Callers with no terminal usually print QuoteCommand(DockerRunCommand(spec))
// instead, so the user can run it where there is one.
func (e *Engine) Shell(ctx context.Context, spec RunSpec) (int, error) {
	fd := int(os.Stdin.Fd())
	tty := term.IsTerminal(fd)
	if tty {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return -1, fmt.Errorf("shell: put the terminal in raw mode: %w", err)
		}
		defer term.Restore(fd, old)
	}
	return e.shell(ctx, spec, shellIO{in: os.Stdin, out: os.Stdout, errOut: os.Stderr, tty: tty, fd: fd})
}

type shellIO struct {
	in          io.Reader
	out, errOut io.Writer
	tty         bool
	fd          int // the terminal, when tty
}

func (e *Engine) shell(ctx context.Context, spec RunSpec, sio shellIO) (int, error) {
	if err := spec.normalize(); err != nil {
		return -1, err
	}
	spec.Interactive = true
	cfg, hc := spec.configs()
	cfg.Tty = sio.tty
	if sio.tty {
		if w, h, err := term.GetSize(sio.fd); err == nil {
			hc.ConsoleSize = [2]uint{uint(h), uint(w)}
		}
	}
	id, err := e.create(ctx, &spec, cfg, hc)
	if err != nil {
		return -1, err
	}
	defer e.remove(id, spec.Name)

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	att, err := e.api.ContainerAttach(runCtx, id, true)
	if err != nil {
		return -1, fmt.Errorf("shell %s: attach: %w", spec.Name, err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if sio.tty {
			io.Copy(sio.out, att.Reader)
		} else {
			stdcopy.StdCopy(sio.out, sio.errOut, att.Reader)
		}
	}()
	defer func() {
		att.Close()
		<-copied
	}()
	go func() {
		io.Copy(att.Conn, sio.in)
		att.CloseWrite() // EOF on stdin reaches the shell
	}()
	if sio.tty {
		stopResize := e.followWindowSize(runCtx, id, sio.fd)
		defer stopResize()
	}
	return e.startAndWait(ctx, &spec, id, runCtx, copied, func() { att.Close() })
}
