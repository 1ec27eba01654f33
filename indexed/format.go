package indexed

// The layout both the writer and the reader follow: the file names of a dataset and the .idx
// header. Kept apart from both so that each depends on it and neither on the other for it.

// The .idx header: 9-byte magic, u64 version, u8 dtype, u64 sequence count,
// u64 document-index count. Everything is little-endian with no padding.
var magic = []byte("MMIDIDX\x00\x00")

const (
	version    = 1
	headerSize = 9 + 8 + 1 + 8 + 8
)

// BinPath and IdxPath name the two files of the dataset at prefix.
func BinPath(prefix string) string { return prefix + ".bin" }

// IdxPath names the index file of the dataset at prefix.
func IdxPath(prefix string) string { return prefix + ".idx" }
