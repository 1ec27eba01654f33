package magecli

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// syncBuffer is a bytes.Buffer the timer's goroutine and the test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCompileNote(t *testing.T) {
	t.Run("a quick compile says nothing", func(t *testing.T) {
		var out syncBuffer
		stop := CompileNote(&out, time.Hour)
		stop()
		assert.Empty(t, out.String())
	})
	t.Run("a long compile says so once", func(t *testing.T) {
		var out syncBuffer
		stop := CompileNote(&out, time.Millisecond)
		assert.Eventually(t, func() bool { return out.String() != "" }, 10*time.Second, time.Millisecond)
		stop()
		assert.Equal(t, "compiling Rival's targets: the first run in a checkout, or after a Go upgrade, takes "+
			FirstCompile+"; later runs start at once\n", out.String())
	})
}
