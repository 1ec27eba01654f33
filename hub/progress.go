package hub

import (
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// bar is one download's progress line; the zero value (silent client) does nothing.
type bar struct {
	c    *Client
	name string
	b    *mpb.Bar
}

func (c *Client) newBar(name string) *bar {
	return &bar{c: c, name: name}
}

// container returns the client's shared progress container, creating it after a Close.
func (c *Client) container() *mpb.Progress {
	c.progressMu.Lock()
	defer c.progressMu.Unlock()
	if c.progress == nil {
		// New only keeps progressOut when it is a terminal or a writer the caller chose
		// explicitly, so refresh whatever it is.
		c.progress = mpb.New(mpb.WithOutput(c.progressOut), mpb.WithWidth(40), mpb.WithAutoRefresh())
	}
	return c.progress
}

// start (re)draws the bar at offset of total (total < 0: unknown yet); a resumed download starts
// where its .part ends, a restarted one at zero.
func (b *bar) start(total, offset int64) {
	if b.c.progressOut == nil {
		return
	}
	if b.b == nil {
		t := max(total, 0)
		nb, err := b.c.container().Add(t, mpb.BarStyle().Build(),
			mpb.PrependDecorators(decor.Name(b.name, decor.WC{C: decor.DindentRight | decor.DextraSpace})),
			mpb.AppendDecorators(
				decor.CountersKibiByte("% .1f / % .1f"),
				decor.Name(" "),
				decor.AverageSpeed(decor.SizeB1024(0), "% .1f"),
				decor.Name(" "),
				decor.Percentage(),
				decor.Name(" ETA "),
				decor.AverageETA(decor.ET_STYLE_GO),
			))
		if err != nil {
			return
		}
		b.b = nb
	}
	if total >= 0 {
		b.b.SetTotal(total, false)
	}
	b.b.SetCurrent(offset)
}

// Write counts bytes as they reach the .part file.
func (b *bar) Write(p []byte) (int, error) {
	if b.b != nil {
		b.b.IncrBy(len(p))
	}
	return len(p), nil
}

// done marks the bar complete.
func (b *bar) done() {
	if b.b != nil {
		b.b.SetTotal(-1, true)
	}
}

// finish stops a bar that did not complete, leaving its last state on screen.
func (b *bar) finish() {
	if b.b != nil && !b.b.Completed() {
		b.b.Abort(false)
	}
}
