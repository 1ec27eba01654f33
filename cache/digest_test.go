package cache

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BLAKE3-256 of "" and of "abc": the published test vectors of the BLAKE3
// reference implementation (b3sum prints the same), independent of this
// package.
const (
	blake3Empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	blake3ABC   = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
)

func TestDigestText(t *testing.T) {
	d := HashBytes([]byte("abc"))
	assert.Equal(t, blake3ABC, d.String())
	assert.Equal(t, blake3ABC[:16], d.Short())
	assert.Len(t, d.Short(), ShortLen)
	assert.Equal(t, blake3Empty, HashBytes(nil).String())
	assert.False(t, d.IsZero())
	assert.True(t, Digest{}.IsZero())

	text, err := d.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, blake3ABC, string(text))
	var back Digest
	require.NoError(t, back.UnmarshalText(text))
	assert.Equal(t, d, back)
}

// The JSON of a record, a stat entry or a manifest is byte for byte what
// it was when digests were hex strings: files written by either read the
// same, and nothing keyed by their bytes changes.
func TestDigestJSONUnchanged(t *testing.T) {
	d := HashBytes([]byte("abc"))
	got, err := json.Marshal(struct {
		D Digest            `json:"digest"`
		M map[Digest]string `json:"m"`
		L []Digest          `json:"l"`
	}{d, map[Digest]string{d: "x"}, []Digest{d}})
	require.NoError(t, err)
	want := `{"digest":"` + blake3ABC + `","m":{"` + blake3ABC + `":"x"},"l":["` + blake3ABC + `"]}`
	assert.Equal(t, want, string(got))

	var r Record
	require.NoError(t, json.Unmarshal([]byte(`{"key":"`+blake3ABC+`","outputs":[{"digest":"`+blake3Empty+`"}]}`), &r))
	assert.Equal(t, d, r.Key)
	assert.Equal(t, HashBytes(nil), r.Outputs[0].Digest)
}

func TestParseDigest(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{"valid", blake3ABC, ""},
		{"empty", "", `digest "": 0 characters, want 64 lowercase hex digits`},
		{"truncated", blake3ABC[:16], `digest "6437b3ac38465133": 16 characters, want 64`},
		{"one short", blake3ABC[:63], "63 characters, want 64"},
		{"one long", blake3ABC + "0", "65 characters, want 64"},
		{"uppercase", strings.ToUpper(blake3ABC), `character 5 is 'B', want lowercase hex`},
		{"not hex", "g" + blake3ABC[1:], `character 1 is 'g'`},
		{"sha256 prefix", "sha256:" + blake3ABC[7:], `character 1 is 's'`},
		{"blake3 prefix", "blake3:" + blake3ABC, "71 characters"},
		{"space", " " + blake3ABC[1:], `character 1 is ' '`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDigest(tc.in)
			var u Digest
			uerr := u.UnmarshalText([]byte(tc.in))
			if tc.err == "" {
				require.NoError(t, err)
				require.NoError(t, uerr)
				assert.Equal(t, tc.in, d.String())
				assert.Equal(t, d, u)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.True(t, d.IsZero())
			require.Error(t, uerr)
			assert.Equal(t, err.Error(), uerr.Error())
		})
	}
}

// A long bad value is quoted only in part.
func TestParseDigestClipsLongInput(t *testing.T) {
	_, err := ParseDigest(strings.Repeat("z", 10000))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200)
}

// FuzzParseDigest: any text either is a digest's text form exactly (it
// prints back to itself) or is refused with an error, never a panic; and
// UnmarshalText agrees with ParseDigest.
func FuzzParseDigest(f *testing.F) {
	for _, s := range []string{blake3ABC, blake3Empty, "", blake3ABC[:16], strings.ToUpper(blake3Empty), "blake3:" + blake3ABC, "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDigest(s)
		var u Digest
		uerr := u.UnmarshalText([]byte(s))
		if err != nil {
			if uerr == nil {
				t.Fatalf("UnmarshalText(%q) accepted what ParseDigest refused: %v", s, err)
			}
			if !d.IsZero() {
				t.Fatalf("ParseDigest(%q) failed but returned %v", s, d)
			}
			return
		}
		if uerr != nil || u != d {
			t.Fatalf("UnmarshalText(%q) = %v, %v; ParseDigest gave %v", s, u, uerr, d)
		}
		if d.String() != s {
			t.Fatalf("ParseDigest(%q).String() = %q", s, d.String())
		}
		text, _ := d.MarshalText()
		if string(text) != s || !strings.HasPrefix(s, d.Short()) {
			t.Fatalf("MarshalText or Short of %q: %q, %q", s, text, d.Short())
		}
	})
}
