package kubeproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/kube/kubespec"
)

// What the program writes is what the caller reads back: lines (an empty one too) and status
// lines in order, then the outcome.
func TestEventStreamRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Status("kube: job bench/x pending: 0 of 2 pods started")
	w.Line("step 1")
	w.Line("")
	w.Line(`odd "quoted" \ line	with a tab`)
	w.Status("kube: job bench/x running on a,b")
	final := kubespec.Final{Nodes: []string{"a", "b"}, Pods: []string{"x-0-abc", "x-1-def"}}
	require.NoError(t, w.End(final, nil))

	var lines, status []string
	out, err := ReadEvents(&buf, func(s string) { lines = append(lines, s) }, func(s string) { status = append(status, s) })
	require.NoError(t, err)
	assert.NoError(t, out.Err)
	assert.Equal(t, final, out.Final)
	assert.Equal(t, []string{"step 1", "", `odd "quoted" \ line	with a tab`}, lines)
	assert.Equal(t, []string{"kube: job bench/x pending: 0 of 2 pods started", "kube: job bench/x running on a,b"}, status)
}

// An error crosses with its text and with what callers test it for.
func TestErrorsCrossWithTheirKinds(t *testing.T) {
	runErr := &kubespec.RunError{Job: "bench/x", Final: kubespec.Final{Reason: "OOMKilled", ExitCode: 137, Nodes: []string{"a"}, Pods: []string{"x-0"}},
		Msg: "container train of pod x-0 exited with code 137 (OOMKilled)"}
	deleteErr := errors.New("kube: Job bench/x and its pods were not gone in time (context deadline exceeded)")
	for _, tc := range []struct {
		name               string
		err                error
		canceled, deadline bool
		run                bool
		same               bool // the caller gets the very error value
	}{
		{"run error", runErr, false, false, true, false},
		{"ctrl-c", context.Canceled, true, false, false, true},
		{"timeout", context.DeadlineExceeded, false, true, false, true},
		{"run error and delete", errors.Join(runErr, deleteErr), false, false, true, false},
		{"ctrl-c and delete", errors.Join(context.Canceled, deleteErr), true, false, false, false},
		{"wrapped timeout", fmt.Errorf("kube: reading Job bench/x: %w", context.DeadlineExceeded), false, true, false, false},
		{"the cluster's", errors.New(`kube: creating Job bench/x: jobs.batch "x" already exists`), false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, NewWriter(&buf).End(kubespec.Final{Reason: "r"}, tc.err))
			out, err := ReadEvents(&buf, nil, nil)
			require.NoError(t, err)
			require.Error(t, out.Err)
			assert.Equal(t, tc.err.Error(), out.Err.Error())
			assert.Equal(t, tc.canceled, errors.Is(out.Err, context.Canceled))
			assert.Equal(t, tc.deadline, errors.Is(out.Err, context.DeadlineExceeded))
			var re *kubespec.RunError
			assert.Equal(t, tc.run, errors.As(out.Err, &re))
			if tc.run {
				assert.Equal(t, runErr, re)
			}
			if tc.same {
				assert.Equal(t, tc.err, out.Err)
			}
			assert.Equal(t, "r", out.Final.Reason)
		})
	}
	var buf bytes.Buffer
	require.NoError(t, NewWriter(&buf).End(kubespec.Final{}, runErr))
	out, err := ReadEvents(&buf, nil, nil)
	require.NoError(t, err)
	var re *kubespec.RunError
	require.ErrorAs(t, out.Err, &re)
	assert.Same(t, re, out.Err, "a run error alone comes back as itself")
}

func TestEventStreamCutShort(t *testing.T) {
	var buf bytes.Buffer
	NewWriter(&buf).Line("step 1")
	_, err := ReadEvents(&buf, nil, nil)
	assert.ErrorContains(t, err, "stopped before the run's end")
	_, err = ReadEvents(strings.NewReader(`{"kind":"line","text":"a"}`+"\n{\"kind\":"), nil, nil)
	assert.ErrorContains(t, err, "reading the events")
	_, err = ReadEvents(strings.NewReader(`{"kind":"beep"}`), nil, nil)
	assert.ErrorContains(t, err, `unknown kind "beep"`)
}

// The log streams while the status is followed: events written at once stay whole.
func TestWriterFromSeveralGoroutines(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				w.Line(fmt.Sprintf("g%d line %d %s", g, i, strings.Repeat("x", 100)))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.End(kubespec.Final{}, nil))
	n := 0
	_, err := ReadEvents(&buf, func(string) { n++ }, nil)
	require.NoError(t, err)
	assert.Equal(t, 800, n)
}

// A writer whose reader is gone keeps going (the program still deletes the run) and says so at
// the end.
func TestWriterWithoutReader(t *testing.T) {
	w := NewWriter(failing{})
	w.Line("a")
	w.Status("b")
	assert.ErrorContains(t, w.End(kubespec.Final{}, nil), "broken pipe")
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("write |1: broken pipe") }
