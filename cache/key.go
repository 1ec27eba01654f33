package cache

import (
	"encoding/binary"
	"sort"

	"github.com/zeebo/blake3"
)

// KeySchema versions the canonical encoding of action keys; bumping it
// invalidates every record at once.
const KeySchema = "rival-action/v1"

// KeyPart is one named input of an action key.
type KeyPart struct {
	Kind  string // "task", "arg", "file", "dep", "param", "env", "tool", "salt"
	Name  string
	Value string
}

// ActionKey is BLAKE3 over a canonical encoding of parts: sorted by kind and
// name, every string length-prefixed, so no two different input sets can
// encode to the same bytes. The order parts are given in does not matter.
func ActionKey(parts []KeyPart) Digest {
	sorted := append([]KeyPart(nil), parts...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Kind != sorted[j].Kind {
			return sorted[i].Kind < sorted[j].Kind
		}
		return sorted[i].Name < sorted[j].Name
	})
	h := blake3.New()
	var lenBuf [binary.MaxVarintLen64]byte
	write := func(s string) {
		n := binary.PutUvarint(lenBuf[:], uint64(len(s)))
		h.Write(lenBuf[:n])
		h.WriteString(s)
	}
	write(KeySchema)
	for _, p := range sorted {
		write(p.Kind)
		write(p.Name)
		write(p.Value)
	}
	return sum(h)
}
