package live

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// screen records what a terminal would be sent.
type screen struct{ bytes.Buffer }

func (*screen) IsTerminal() bool { return true }

func TestETA(t *testing.T) {
	for _, tc := range []struct {
		done, total float64
		el          time.Duration
		want        string
	}{{0, 10, time.Second, "?"}, {5, 10, 10 * time.Second, "10s"}, {10, 10, time.Minute, "0s"}, {1, 100, time.Second, "1m39s"}} {
		assert.Equal(t, tc.want, ETA(tc.done, tc.total, tc.el))
	}
}

// On a terminal the line redraws at most every 250 ms of its clock and the closing line replaces it.
func TestLineOnATerminal(t *testing.T) {
	var s screen
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	l := NewClocked(&s, func() time.Time { return clock })
	l.Update("one")
	clock = t0.Add(100 * time.Millisecond)
	l.Update("too soon")
	clock = t0.Add(300 * time.Millisecond)
	l.Update("two")
	l.Done("done")
	assert.Equal(t, "\r\033[K  one\r\033[K  two\r\033[K  done\n", s.String())
}

// Off a terminal only the closing line is written.
func TestLineOffATerminal(t *testing.T) {
	var b bytes.Buffer
	l := New(&b)
	l.Update("one")
	l.Update("two")
	l.Done("done")
	l.Clear()
	assert.Equal(t, "  done\n", b.String())
}
