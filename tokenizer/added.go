package tokenizer

// trie finds added tokens in raw text, leftmost-longest, as the reference does
// before normalization. Edges live in one map keyed by (node, byte).
type trie struct {
	edges map[uint64]int32 // node<<8 | byte -> child node
	ids   []int32          // token id ending at each node, or -1
	first [256]bool        // bytes that can start a token
	any   bool
}

func newTrie() *trie {
	return &trie{edges: map[uint64]int32{}, ids: []int32{-1}}
}

func (t *trie) insert(s string, id int32) {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		k := uint64(node)<<8 | uint64(s[i])
		child, ok := t.edges[k]
		if !ok {
			child = int32(len(t.ids))
			t.ids = append(t.ids, -1)
			t.edges[k] = child
		}
		node = child
	}
	t.ids[node] = id
	t.first[s[0]] = true
	t.any = true
}

// find returns the leftmost, then longest, token in s at or after from:
// its start, end and id; start is -1 when there is none.
func (t *trie) find(s string, from int) (start, end int, id int32) {
	if !t.any {
		return -1, 0, 0
	}
	for i := from; i < len(s); i++ {
		if !t.first[s[i]] {
			continue
		}
		node, best, bestEnd := int32(0), int32(-1), 0
		for j := i; j < len(s); j++ {
			child, ok := t.edges[uint64(node)<<8|uint64(s[j])]
			if !ok {
				break
			}
			node = child
			if t.ids[node] >= 0 {
				best, bestEnd = t.ids[node], j+1
			}
		}
		if best >= 0 {
			return i, bestEnd, best
		}
	}
	return -1, 0, 0
}
