//go:build amd64 && !purego

package cache

import "golang.org/x/sys/cpu"

// haveX16 reports whether compressChunks16 and compressParents16 (AVX-512F,
// blake3x16_amd64.s) can run here.
var haveX16 = cpu.X86.HasAVX512F

// compressChunks16 writes to out the chaining values of the 16 whole chunks
// of buf, chunk j in lane j (out[w][j] is word w of its value), chunk j
// having counter ctr[0][j] | ctr[1][j]<<32; block i of every chunk gets
// flags[i].
//
//go:noescape
func compressChunks16(out *[8][16]uint32, buf *[16 * 1024]byte, key *[8]uint32, ctr *[2][16]uint32, flags *[16]uint32)

// compressParents16 writes to out the chaining values of 16 parent nodes,
// parent p over children 2p and 2p+1 of the 32 in left (children 0..15) then
// right (16..31), in the lane layout of compressChunks16. out may be left.
//
//go:noescape
func compressParents16(out, left, right *[8][16]uint32, key *[8]uint32, flags uint32)
