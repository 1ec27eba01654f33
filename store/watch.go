package store

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// watched is a blob stream that reports progress and cancels its transfer when no byte has moved
// for the stall limit: a registry that stops answering mid-blob fails the transfer, it does not
// hang it.
type watched struct {
	r       io.Reader
	s       *Store
	op      string
	name    string
	total   int64
	done    int64
	start   time.Time
	timer   *time.Timer
	stalled atomic.Bool
	limit   time.Duration
}

func (s *Store) watch(ctx context.Context, cancel context.CancelFunc, r io.Reader, op, name string, total int64) *watched {
	w := &watched{r: r, s: s, op: op, name: name, total: total, start: time.Now(), limit: s.opt.stall()}
	w.timer = time.AfterFunc(w.limit, func() {
		w.stalled.Store(true)
		cancel()
	})
	return w
}

func (w *watched) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.timer.Reset(w.limit)
		w.done += int64(n)
		if w.s.opt.Progress != nil {
			w.s.opt.Progress(Progress{Op: w.op, Name: w.name, Done: w.done, Total: w.total, Elapsed: time.Since(w.start)})
		}
	}
	return n, err
}

func (w *watched) stop() { w.timer.Stop() }

// cause names a stall as the reason a transfer failed.
func (w *watched) cause(err error) error {
	if err != nil && w.stalled.Load() {
		return fmt.Errorf("%s %s: no byte moved for %s after %d of %d bytes: %w", w.op, w.name, w.limit, w.done, w.total, err)
	}
	return err
}

// resuming continues a blob download where it broke off: after a read error it asks the registry
// for the rest of the blob (an HTTP Range request, through oras-go's seekable body) instead of
// starting again, up to tries times, with back-off. Bytes already read stay read, so the hashes
// the caller takes over the stream still cover every byte once.
type resuming struct {
	ctx   context.Context
	rs    io.ReadSeeker
	off   int64
	size  int64
	tries int
}

func (r *resuming) Read(p []byte) (int, error) {
	n, err := r.rs.Read(p)
	r.off += int64(n)
	if err == nil || err == io.EOF || r.off >= r.size {
		return n, err
	}
	for ; r.tries > 0 && r.ctx.Err() == nil; r.tries-- {
		select {
		case <-r.ctx.Done():
		case <-time.After(time.Duration(200<<min(6, 4-min(r.tries, 4))) * time.Millisecond):
		}
		// Seeking to where the body already is does nothing in oras-go: move to the end first,
		// so the second seek opens a new ranged request.
		if _, e := r.rs.Seek(r.size, io.SeekStart); e != nil {
			continue
		}
		if _, e := r.rs.Seek(r.off, io.SeekStart); e == nil {
			r.tries--
			return n, nil
		}
	}
	return n, err
}
