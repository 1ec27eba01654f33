package cache

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/zeebo/blake3"
)

// Digest is the lowercase hex BLAKE3-256 of some content.
type Digest string

var digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Valid reports whether d has the shape of a digest.
func (d Digest) Valid() bool { return digestRE.MatchString(string(d)) }

// Short is the first 8 hex digits, for messages.
func (d Digest) Short() string {
	if len(d) < 8 {
		return string(d)
	}
	return string(d[:8])
}

// HashBytes digests b.
func HashBytes(b []byte) Digest {
	sum := blake3.Sum256(b)
	return Digest(hex.EncodeToString(sum[:]))
}

// HashReader digests everything r yields and returns the byte count.
func HashReader(r io.Reader) (Digest, int64, error) {
	h := blake3.New()
	buf := make([]byte, 1<<20)
	n, err := io.CopyBuffer(h, r, buf)
	if err != nil {
		return "", n, err
	}
	return Digest(hex.EncodeToString(h.Sum(nil))), n, nil
}

// HashFile digests the file at path, without the stat cache.
func HashFile(path string) (Digest, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	d, n, err := HashReader(f)
	if err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", path, err)
	}
	return d, n, nil
}
