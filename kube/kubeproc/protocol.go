// Package kubeproc runs Kubernetes work in the rival-kube program (cmd/rival-kube) instead of in
// the targets' process: the targets then compile without client-go and the Kubernetes API types,
// about 250 packages that only CLUSTER=k8s needs. It builds the program from this module's source
// on first use (Helper), and speaks to it in JSON: a run goes to its standard input, and a run's log
// lines, status lines and outcome come back as JSON lines on its standard output (Event).
// Cancelling the caller's context reaches the program, which then deletes the run's objects as the
// in-process client does.
package kubeproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/rivalbench/rival/kube/kubespec"
)

// The kinds of Event.
const (
	EventLine   = "line"   // a line of rank 0's log
	EventStatus = "status" // a change of the run's state (pending and why, running on which nodes)
	EventEnd    = "end"    // the outcome; the last event
)

// Event is one JSON line `rival-kube run` writes on its standard output.
type Event struct {
	Kind  string          `json:"kind"`
	Text  string          `json:"text,omitempty"`  // the line (EventLine, EventStatus)
	Final *kubespec.Final `json:"final,omitempty"` // what the run came to (EventEnd)
	Error *Failure        `json:"error,omitempty"` // why it did not complete (EventEnd); nil: it completed
}

// Failure is an error as it crosses from the program to the caller: its text, and what the caller
// tells errors apart by.
type Failure struct {
	Text     string             `json:"text"`
	Canceled bool               `json:"canceled,omitempty"` // errors.Is(err, context.Canceled)
	Deadline bool               `json:"deadline,omitempty"` // errors.Is(err, context.DeadlineExceeded)
	Run      *kubespec.RunError `json:"run,omitempty"`      // errors.As(err, **kubespec.RunError)
}

// NewFailure describes err for the caller; nil for nil.
func NewFailure(err error) *Failure {
	if err == nil {
		return nil
	}
	f := &Failure{Text: err.Error(), Canceled: errors.Is(err, context.Canceled), Deadline: errors.Is(err, context.DeadlineExceeded)}
	var re *kubespec.RunError
	if errors.As(err, &re) {
		f.Run = re
	}
	return f
}

// Err is the error the failure describes: the same text, and errors.Is and errors.As find what
// they found in the program. A failure that is exactly one of them is that error itself.
func (f *Failure) Err() error {
	if f == nil {
		return nil
	}
	var errs []error
	if f.Run != nil {
		errs = append(errs, f.Run)
	}
	if f.Canceled {
		errs = append(errs, context.Canceled)
	}
	if f.Deadline {
		errs = append(errs, context.DeadlineExceeded)
	}
	if len(errs) == 1 && errs[0].Error() == f.Text {
		return errs[0]
	}
	return &crossedError{text: f.Text, errs: errs}
}

// crossedError is an error that came from the program, with the errors it wrapped there.
type crossedError struct {
	text string
	errs []error
}

func (e *crossedError) Error() string   { return e.text }
func (e *crossedError) Unwrap() []error { return e.errs }

// Writer writes a run's events; its methods may be called from several goroutines (the log
// streams while the status is followed).
type Writer struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewWriter writes events to w.
func NewWriter(w io.Writer) *Writer { return &Writer{enc: json.NewEncoder(w)} }

func (w *Writer) write(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Once the caller is gone the events have no reader; the run goes on to delete its objects.
	if w.err == nil {
		w.err = w.enc.Encode(e)
	}
}

// Line writes a log line.
func (w *Writer) Line(s string) { w.write(Event{Kind: EventLine, Text: s}) }

// Status writes a status line.
func (w *Writer) Status(s string) { w.write(Event{Kind: EventStatus, Text: s}) }

// End writes the outcome and reports the first error writing any event met.
func (w *Writer) End(final kubespec.Final, err error) error {
	w.write(Event{Kind: EventEnd, Final: &final, Error: NewFailure(err)})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Outcome is how a run ended, as its end event says.
type Outcome struct {
	Final kubespec.Final
	Err   error // nil: the run completed
}

// ReadEvents reads events until the end, handing lines to onLine and status lines to status (nil
// drops either), and returns the run's outcome; an error when the stream stops or breaks before it.
func ReadEvents(r io.Reader, onLine, status func(string)) (Outcome, error) {
	dec := json.NewDecoder(r)
	for {
		var e Event
		if err := dec.Decode(&e); err != nil {
			if err == io.EOF {
				return Outcome{}, errors.New("the events stopped before the run's end")
			}
			return Outcome{}, fmt.Errorf("reading the events: %v", err)
		}
		switch e.Kind {
		case EventLine:
			if onLine != nil {
				onLine(e.Text)
			}
		case EventStatus:
			if status != nil {
				status(e.Text)
			}
		case EventEnd:
			var o Outcome
			if e.Final != nil {
				o.Final = *e.Final
			}
			o.Err = e.Error.Err()
			return o, nil
		default:
			return Outcome{}, fmt.Errorf("an event of unknown kind %q", e.Kind)
		}
	}
}
