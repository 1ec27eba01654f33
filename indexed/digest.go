package indexed

import (
	"encoding/hex"
	"fmt"
)

// Digest is a BLAKE3-256 digest. Its text form (in JSON, in logs) is 64
// lowercase hex digits, the form manifests have always recorded, so a
// fingerprint travels as bytes and turns into text only where it is
// written or shown.
type Digest [32]byte

// String is the text form: 64 lowercase hex digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d was never set: no content hashes to it in
// practice, so a zero digest in a decoded manifest marks a missing field.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText writes the text form.
func (d Digest) MarshalText() ([]byte, error) {
	b := make([]byte, 2*len(d))
	hex.Encode(b, d[:])
	return b, nil
}

// UnmarshalText reads exactly what MarshalText writes. Anything else (cut
// short, in capitals, another hash's length) is an error naming the value,
// so a hand-edited manifest never yields a digest of a fragment.
func (d *Digest) UnmarshalText(b []byte) error {
	var v Digest
	if len(b) != 2*len(v) {
		return fmt.Errorf("digest %q: %d characters, want %d lowercase hex digits of a BLAKE3-256", clip(b), len(b), 2*len(v))
	}
	for i, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("digest %q: character %d is %q, want lowercase hex", clip(b), i+1, c)
		}
	}
	hex.Decode(v[:], b) // checked above: cannot fail
	*d = v
	return nil
}

// clip bounds what an error quotes of a bad digest.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
