package indexed

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFingerprintJSONKeepsHexText: the digests travel as bytes but are
// written as they always were, 64 lowercase hex digits, so manifests and
// results keep their bytes. The expected digests are b3sum's, of the files
// and of the domain string, a zero byte and the two raw file digests
// (`printf 'rival indexed fingerprint v1\0' | cat - <(xxd -r -p <<< "$IDX$BIN") | b3sum`).
func TestFingerprintJSONKeepsHexText(t *testing.T) {
	prefix := writeDocs(t, t.TempDir(), "ds", Uint16, [][]int32{{1, 2, 3}, {4, 5}})
	fp, err := FingerprintFiles(prefix)
	require.NoError(t, err)
	data, err := json.Marshal(fp)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, "ee98b04dc74772e6349af134b7af5249bbd3839c46711157b1e8c09d869c6464", doc["idx_blake3"])
	assert.Equal(t, "95717ee038a4098ea964bb0ebfef7d6e2d133a516409a4cd263bec361e91aa29", doc["bin_blake3"])
	assert.Equal(t, "7619922fd61cc5e5c6d7dcdc03356b8c7799ecbeb3f6076357b3109133ef9f9b", doc["digest"])

	var back Fingerprint
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, fp, back, "the text form reads back to the same bytes")
	assert.Equal(t, doc["digest"], fp.Digest.String())
}

func TestDigestUnmarshalText(t *testing.T) {
	good := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		name, in, err string
	}{
		{"lowercase hex", good, ""},
		{"empty", "", `digest "": 0 characters, want 64`},
		{"cut to 16 digits", good[:16], `digest "0123456789abcdef": 16 characters`},
		{"one digit long", good + "0", "65 characters"},
		{"capitals", strings.ToUpper(good), `character 11 is 'A', want lowercase hex`},
		{"not hex", "zz" + good[2:], `digest "zz23456789abcdef`},
		{"long value clipped", strings.Repeat("x", 200), `digest "` + strings.Repeat("x", 80) + `..."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Digest
			err := d.UnmarshalText([]byte(tc.in))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.True(t, d.IsZero(), "a bad value leaves the digest unset")
				return
			}
			require.NoError(t, err)
			want, _ := hex.DecodeString(tc.in)
			assert.Equal(t, want, d[:])
		})
	}
}

// FuzzDigestUnmarshalText: any input is either refused with an error or is
// exactly the text MarshalText writes back; the oracle is encoding/hex.
func FuzzDigestUnmarshalText(f *testing.F) {
	f.Add(strings.Repeat("0123456789abcdef", 4))
	f.Add(strings.Repeat("A", 64))
	f.Add("")
	f.Add(strings.Repeat("f", 65))
	f.Fuzz(func(t *testing.T, s string) {
		var d Digest
		err := d.UnmarshalText([]byte(s))
		raw, hexErr := hex.DecodeString(s)
		canonical := hexErr == nil && len(raw) == 32 && s == strings.ToLower(s)
		if !canonical {
			require.Error(t, err, "%q is not 64 lowercase hex digits", s)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, raw, d[:])
		back, err := d.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, s, string(back))
	})
}
