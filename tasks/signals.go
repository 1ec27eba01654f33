package tasks

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/rivalbench/rival/tasks/executor"
)

// exitCode is the shell's status for a process stopped by s.
func exitCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// handleSignals makes Rival, not the process around it, own Ctrl-C and
// SIGTERM for the life of a target. The first signal cancels ctx and Rival
// stays up until its tasks have stopped their processes and removed their
// containers; a second signal, or a stop still unfinished after the grace
// period, kills the remaining host process groups and exits at once, with
// the signal's usual default restored.
//
// signal.Ignore first detaches every earlier handler, including the one
// mage's generated main installs, which would exit 5 s after Ctrl-C and
// leave a slow trainer running without Rival. mage registers its SIGINT
// handler concurrently with the target, and on a loaded machine that can
// be late, so Rival takes SIGINT back again and again (50 ms, doubling to
// once a second) until the first signal arrives. SIGTERM, which mage never
// registers, is taken once and never re-taken, so no retake can drop it;
// a Ctrl-C that falls in a retake's microseconds-wide gap is ignored and
// the next one is the first.
//
// caught reports the first signal received, nil when none came: a target
// that then returns exits with the shell's status for it (130 for Ctrl-C).
func handleSignals(parent context.Context, out io.Writer, g time.Duration) (ctx context.Context, stop func(), caught func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	var got struct {
		sync.Mutex
		s os.Signal
	}
	ch := make(chan os.Signal, 4)
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	retakeInterrupt := func() {
		signal.Ignore(os.Interrupt)
		signal.Notify(ch, os.Interrupt)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// mage installs its SIGINT handler while the target starts, maybe
		// late: keep taking SIGINT back until the first signal.
		every := 50 * time.Millisecond
		retake := time.NewTimer(every)
		defer retake.Stop()
		var first os.Signal
		for first == nil {
			select {
			case first = <-ch:
			case <-retake.C:
				retakeInterrupt()
				every = min(2*every, time.Second)
				retake.Reset(every)
			case <-done:
				return
			}
		}
		got.Lock()
		got.s = first
		got.Unlock()
		fmt.Fprintf(out, "\n%s: stopping; waiting up to %s for running tasks to stop their processes and remove their containers (press Ctrl-C again to stop at once)\n", sigName(first), g)
		cancel()
		timer := time.NewTimer(g)
		defer timer.Stop()
		code := exitCode(first)
		select {
		case s := <-ch:
			fmt.Fprintf(out, "%s again: stopping at once\n", sigName(s))
			code = exitCode(s)
		case <-timer.C:
			fmt.Fprintf(out, "still running %s after %s: stopping at once\n", sigName(first), g)
		case <-done:
			return
		}
		executor.KillGroups()
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		fmt.Fprintln(out, "tasks: stopped; failed")
		os.Exit(code)
	}()
	return ctx, func() {
			close(done)
			wg.Wait()
			signal.Stop(ch)
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			cancel()
		}, func() os.Signal {
			got.Lock()
			defer got.Unlock()
			return got.s
		}
}

func sigName(s os.Signal) string {
	if s == os.Interrupt {
		return "Ctrl-C"
	}
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return s.String()
}
