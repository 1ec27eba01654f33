package slurm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/rivalbench/rival/safefile"
)

// maxLine bounds one buffered log line: a longer one is passed on in pieces, so a log without
// newlines cannot grow memory without limit.
const maxLine = 1 << 20

// tailer follows a log file that a job writes: the file may not exist yet, may end in a partial
// line, and is read only from where the last poll stopped.
type tailer struct {
	path    string
	onLine  func(string)
	off     int64
	partial []byte
	buf     []byte
}

func newTailer(path string, onLine func(string)) *tailer {
	if onLine == nil {
		onLine = func(string) {}
	}
	return &tailer{path: path, onLine: onLine, buf: make([]byte, 64<<10)}
}

// poll passes on every complete line written since the last poll; with flush it also passes on a
// final line that has no newline.
func (t *tailer) poll(flush bool) error {
	f, _, err := safefile.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // Slurm creates the log when the job starts
	}
	if err != nil {
		return fmt.Errorf("read job log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read job log: %w", err)
	}
	if st.Size() < t.off {
		// Truncated (a requeued job starts its log again): read it from the start.
		t.off, t.partial = 0, t.partial[:0]
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return fmt.Errorf("read job log %s: %w", t.path, err)
	}
	for {
		n, err := f.Read(t.buf)
		t.off += int64(n)
		t.feed(t.buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read job log %s: %w", t.path, err)
		}
	}
	if flush && len(t.partial) > 0 {
		t.emit(t.partial)
		t.partial = t.partial[:0]
	}
	return nil
}

func (t *tailer) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.partial = append(t.partial, p...)
			for len(t.partial) >= maxLine {
				t.emit(t.partial[:maxLine])
				t.partial = append(t.partial[:0], t.partial[maxLine:]...)
			}
			return
		}
		if len(t.partial) > 0 {
			t.partial = append(t.partial, p[:i]...)
			t.emit(t.partial)
			t.partial = t.partial[:0]
		} else {
			t.emit(p[:i])
		}
		p = p[i+1:]
	}
}

func (t *tailer) emit(line []byte) {
	t.onLine(string(bytes.TrimSuffix(line, []byte("\r"))))
}
