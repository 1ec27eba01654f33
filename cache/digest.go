package cache

import (
	"encoding/hex"
	"fmt"
	"io"
	"sync"

	"github.com/zeebo/blake3"
)

// Digest is a BLAKE3-256 digest of some content. Its text form (String,
// MarshalText, and so every JSON field, file name and key part that holds
// one) is the 64 lowercase hex digits of its bytes.
type Digest [32]byte

// ShortLen is the number of hex digits Short keeps: 16 digits (64 bits)
// are how messages, reports and per-dataset folder names show a digest.
const ShortLen = 16

// ParseDigest reads the text form of a digest: exactly 64 hex digits,
// lowercase as Rival writes them.
func ParseDigest(s string) (Digest, error) { return parseDigestBytes(s) }

// parseDigestBytes is ParseDigest for a string or bytes, without an
// allocation unless it fails (verify parses two digests per entry).
func parseDigestBytes[T string | []byte](s T) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return Digest{}, fmt.Errorf("digest %q: %d characters, want %d lowercase hex digits of a BLAKE3-256", clip(string(s)), len(s), 2*len(d))
	}
	for i := range d {
		hi, ok1 := hexVal(s[2*i])
		lo, ok2 := hexVal(s[2*i+1])
		if !ok1 || !ok2 {
			bad := 2 * i
			if ok1 {
				bad++
			}
			return Digest{}, fmt.Errorf("digest %q: character %d is %q, want lowercase hex", clip(string(s)), bad+1, s[bad])
		}
		d[i] = hi<<4 | lo
	}
	return d, nil
}

// hexVal is the value of one lowercase hex digit.
func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// clip bounds what an error quotes of a bad digest.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// String is the full lowercase hex form.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Short is the first ShortLen hex digits, for messages and names.
func (d Digest) Short() string { return d.String()[:ShortLen] }

// IsZero reports whether d is the zero value, which no content hashes to in
// practice: it marks a digest that was never set.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText writes the full lowercase hex form.
func (d Digest) MarshalText() ([]byte, error) {
	b := make([]byte, 2*len(d))
	hex.Encode(b, d[:])
	return b, nil
}

// UnmarshalText reads what MarshalText wrote; anything else (a truncated or
// uppercase digest, another hash's length) is an error.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := parseDigestBytes(b)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// HashBytes digests b.
func HashBytes(b []byte) Digest { return blake3.Sum256(b) }

// HashReader digests everything r yields and returns the byte count.
func HashReader(r io.Reader) (Digest, int64, error) {
	h := blake3.New()
	bp := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(bp)
	// Hiding r's WriteTo (an *os.File has one, which allocates its own
	// buffer) makes CopyBuffer use the pooled one.
	n, err := io.CopyBuffer(h, struct{ io.Reader }{r}, *bp)
	if err != nil {
		return Digest{}, n, err
	}
	return sum(h), n, nil
}

// hashBufs holds the 256 KiB read buffers of HashReader, so hashing many small
// files (cache:verify) does not allocate one per file.
var hashBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// sum is the digest h has taken so far.
func sum(h *blake3.Hasher) Digest {
	var d Digest
	copy(d[:], h.Sum(nil))
	return d
}
