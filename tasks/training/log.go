package training

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/tasks/executor"
)

// keepPrevLog links an existing log to LOG.prev (no copy).
func keepPrevLog(logPath string) {
	os.Remove(logPath + ".prev")
	if _, err := os.Stat(logPath); err == nil {
		if os.Link(logPath, logPath+".prev") != nil {
			os.Rename(logPath, logPath+".prev")
		}
	}
}

func failedLog(logPath string) string { return strings.TrimSuffix(logPath, ".log") + ".failed.log" }

// recordFailure keeps a failed run's log under a name that is not an
// output, and writes why it failed next to the run's files.
func recordFailure(runDir, logPath, name string, cause error) {
	if _, err := os.Stat(logPath + ".partial"); err == nil {
		os.Rename(logPath+".partial", failedLog(logPath))
	} else {
		os.Rename(logPath, failedLog(logPath))
	}
	if _, err := os.Stat(logPath + ".prev"); err == nil {
		os.Rename(logPath+".prev", logPath)
	}
	data, _ := json.MarshalIndent(map[string]string{
		"run": name, "failed_at": time.Now().UTC().Format(time.RFC3339), "reason": cause.Error(), "log": failedLog(logPath),
	}, "", "  ")
	cache.WriteFileAtomic(filepath.Join(runDir, "failure.json"), append(data, '\n'), 0o644)
}

// runAndLog runs the launch, writing every line to the log (through a
// partial file renamed at the end) and showing step progress on prog, whose
// closing line the caller writes once the result is known.
func runAndLog(ctx context.Context, ex executor.Executor, launch core.Launch, maps []executor.PathMap, logPath string, prog *stepProgress, clock *stepClock) (executor.Info, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return executor.Info{}, err
	}
	partial := logPath + ".partial"
	f, err := os.Create(partial)
	if err != nil {
		return executor.Info{}, fmt.Errorf("log %s: %w", partial, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	var writeErr error
	var mu sync.Mutex
	info, runErr := ex.Run(ctx, launch, maps, func(line string) {
		clock.line(line, time.Now())
		mu.Lock()
		defer mu.Unlock()
		if writeErr == nil {
			if _, err := bw.WriteString(line + "\n"); err != nil {
				writeErr = err
			}
		}
		prog.line(line)
	})
	if err := bw.Flush(); err != nil && writeErr == nil {
		writeErr = err
	}
	if err := f.Sync(); err != nil && writeErr == nil {
		writeErr = err
	}
	f.Close()
	// A finished run's log takes its final name; a failed one's stays
	// partial for recordFailure, so it never replaces a good log.
	if writeErr == nil && runErr == nil {
		os.Rename(partial, logPath)
	}
	if writeErr != nil {
		return info, fmt.Errorf("saving the log %s: %w", logPath, writeErr)
	}
	if runErr != nil {
		return info, runErr
	}
	if info.ExitCode != 0 {
		return info, fmt.Errorf("%s exited with status %d", launch.Framework, info.ExitCode)
	}
	return info, nil
}
