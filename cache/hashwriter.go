package cache

import (
	"io"

	"github.com/zeebo/blake3"
)

// hashWriter hashes what passes through it on the way to w.
type hashWriter struct {
	w io.Writer
	h *blake3.Hasher
}

func newHashWriter(w io.Writer) *hashWriter { return &hashWriter{w: w, h: blake3.New()} }

func (hw *hashWriter) Write(p []byte) (int, error) {
	hw.h.Write(p)
	return hw.w.Write(p)
}

func (hw *hashWriter) digest() Digest { return sum(hw.h) }
