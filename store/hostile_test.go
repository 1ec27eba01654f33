package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
	"github.com/rivalbench/rival/store"
)

// The store's CA file (RIVAL_STORE_CA) is read before any request: one
// that is not a regular file of configuration size is refused, naming it.
func TestCAFileRefusesHostileFiles(t *testing.T) {
	want := map[string]error{
		safefiletest.DevZero:   safefile.ErrNotRegular,
		safefiletest.FIFO:      safefile.ErrNotRegular,
		safefiletest.Directory: safefile.ErrNotRegular,
		safefiletest.OverLimit: safefile.ErrTooLarge,
	}
	loc, err := store.ParseLocation("oci://127.0.0.1:1/rival/cache")
	require.NoError(t, err)
	for _, kind := range safefiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ca.pem")
			safefiletest.Plant(t, p, kind, safefile.LimitConfig)
			safefiletest.Within(t, func() {
				_, err := store.Open(context.Background(), loc, store.Options{CAFile: p})
				require.ErrorIs(t, err, want[kind])
				assert.Contains(t, err.Error(), p)
			})
		})
	}
}
