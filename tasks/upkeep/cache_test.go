package upkeep

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
)

// A limit that does not parse is refused naming its setting, before the
// cache is touched; limits that parse trim and say so with the limits as
// typed.
func TestCacheTrimLimits(t *testing.T) {
	cases := []struct {
		name, maxSize, maxAge string
		wantErr, wantOut      string
	}{
		{"size", "lots", "30d", "RIVAL_CACHE_MAX: ", ""},
		{"age", "50GiB", "soon", "RIVAL_CACHE_MAX_AGE: ", ""},
		{"empty cache", "50GiB", "30d", "", "cache:trim (max 50GiB on disk, unused for 30d): removed 0 records and 0 blobs, freed 0 B; "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
			require.NoError(t, err)
			var out bytes.Buffer
			err = CacheTrim(context.Background(), &out, c, tc.maxSize, tc.maxAge)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Empty(t, out.String())
				return
			}
			require.NoError(t, err)
			assert.Contains(t, out.String(), tc.wantOut)
		})
	}
}

// An empty cache verifies clean and says what it rehashed.
func TestCacheVerifyEmpty(t *testing.T) {
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, CacheVerify(context.Background(), &out, c))
	assert.Equal(t, "cache:verify: 0 blobs (0 B) and 0 materialized outputs rehashed\n", out.String())
}
