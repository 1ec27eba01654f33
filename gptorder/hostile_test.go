package gptorder_test

import (
	"context"
	"testing"

	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// The sample-order indices live in the workspace's data folder: one that
// is not a regular file of a size an index has is refused, naming it.
func TestReadRefusesHostileIndexFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitSampleIndex, func(t *testing.T) (string, func() error) {
		dir := t.TempDir()
		o := gptorder.Order{Seed: 1234, SeqLen: 8, NumSamples: 4, AddExtraToken: true}
		doc, _, _ := o.Paths(dir)
		return doc, func() error { _, err := gptorder.Read(context.Background(), dir, o); return err }
	})
}
