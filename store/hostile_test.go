package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
	"github.com/rivalbench/rival/store"
)

// The store's CA file (RIVAL_STORE_CA) is read before any request: one
// that is not a regular file of configuration size is refused, naming it.
func TestCAFileRefusesHostileFiles(t *testing.T) {
	loc, err := store.ParseLocation("oci://127.0.0.1:1/rival/cache")
	require.NoError(t, err)
	safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitConfig, func(t *testing.T) (string, func() error) {
		p := filepath.Join(t.TempDir(), "ca.pem")
		return p, func() error { _, err := store.Open(context.Background(), loc, store.Options{CAFile: p}); return err }
	})
}
