package dag

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMissingInputFileIsNamed(t *testing.T) {
	f := newFixture(t)
	missing := f.path("gone.jsonl")
	task := &Task{ID: "filter gone", Files: []string{missing}, Run: func(context.Context, *Exec) error { return nil }}
	err := f.runner().Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gone.jsonl")
	assert.Contains(t, err.Error(), "no such file")
}

func TestUnreadableInputIsAnError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	f := newFixture(t)
	p := f.path("secret.jsonl")
	require.NoError(t, os.WriteFile(p, []byte("{}"), 0o000))
	task := &Task{ID: "filter secret", Files: []string{p}, Run: func(context.Context, *Exec) error { return nil }}
	err := f.runner().Run(context.Background(), task)
	require.ErrorContains(t, err, "permission denied")
}
