//go:build !amd64 || purego

package cache

// haveX16 is false: there is no 16-lane kernel for this architecture.
const haveX16 = false

func compressChunks16(out *[8][16]uint32, buf *[16 * 1024]byte, key *[8]uint32, ctr *[2][16]uint32, flags *[16]uint32) {
	panic("cache: compressChunks16 has no implementation on this architecture")
}

func compressParents16(out, left, right *[8][16]uint32, key *[8]uint32, flags uint32) {
	panic("cache: compressParents16 has no implementation on this architecture")
}
