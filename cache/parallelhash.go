package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"

	"lukechampine.com/blake3/guts"
)

// Large files are hashed on every core. BLAKE3 is a binary tree over 1024-byte
// chunks whose left subtree always holds the largest power-of-two number of
// chunks below the total; so the file is cut into units of parUnit bytes (a
// power-of-two number of chunks, aligned to the start), each unit's subtree is
// hashed on a worker with its chunk counter, and the units' chaining values are
// joined by parent nodes in the tree's own shape. The root node alone gets the
// ROOT flag. The result is the digest b3sum prints (TestParallelHashMatchesB3sum).

const (
	// parUnit is the bytes one worker hashes at a time: 4096 chunks.
	parUnit = 4 << 20
	// parMin is the smallest file hashed in parallel; below it the sequential
	// hasher is as fast.
	parMin = 2 * parUnit
	// chunksPerBuf is what one SIMD call compresses (guts.MaxSIMD chunks).
	chunksPerBuf = guts.MaxSIMD
)

// subtree returns the (unfinalized) root node of the BLAKE3 subtree over buf,
// whose first chunk has number counter. A group of fewer than guts.MaxSIMD
// chunks is copied into scratch first, so nothing past buf is ever read.
func subtree(buf []byte, counter uint64, scratch *[guts.MaxSIMD * guts.ChunkSize]byte) guts.Node {
	chunks := (len(buf) + guts.ChunkSize - 1) / guts.ChunkSize
	if chunks <= chunksPerBuf {
		group := scratch
		if len(buf) == len(scratch) {
			group = (*[guts.MaxSIMD * guts.ChunkSize]byte)(buf)
		} else {
			copy(scratch[:], buf)
		}
		return guts.CompressBuffer(group, len(buf), &guts.IV, counter, 0)
	}
	left := 1 << (bits.Len(uint(chunks-1)) - 1) // largest power of two below chunks
	l := subtree(buf[:left*guts.ChunkSize], counter, scratch)
	r := subtree(buf[left*guts.ChunkSize:], counter+uint64(left), scratch)
	return guts.ParentNode(guts.ChainingValue(l), guts.ChainingValue(r), &guts.IV, 0)
}

// x16Bytes is what subtree256 hashes: 256 chunks, a subtree of the BLAKE3
// tree wherever it starts on a multiple of its size.
const x16Bytes = 256 * guts.ChunkSize

// lanes16 holds 16 chaining values side by side, value j in lane j.
type lanes16 = [8][16]uint32

// subtree256 returns the chaining value of the 256 chunks in buf, the first
// having number counter, on the 16-lane kernel: 16 calls of 16 chunks, then
// the parents level by level, 16 at a time.
func subtree256(buf *[x16Bytes]byte, counter uint64) [8]uint32 {
	var lv [16]lanes16
	var ctr [2][16]uint32
	var fl [16]uint32
	fl[0] |= guts.FlagChunkStart
	fl[15] |= guts.FlagChunkEnd
	for g := range lv {
		for j := range 16 {
			c := counter + uint64(16*g+j)
			ctr[0][j], ctr[1][j] = uint32(c), uint32(c>>32)
		}
		compressChunks16(&lv[g], (*[16 * guts.ChunkSize]byte)(buf[g*16*guts.ChunkSize:]), &guts.IV, &ctr, &fl)
	}
	for n := len(lv); n > 1; n /= 2 {
		for g := range n / 2 {
			compressParents16(&lv[g], &lv[2*g], &lv[2*g+1], &guts.IV, guts.FlagParent)
		}
	}
	// 16 values left, in lv[0]: four more levels, in its first lanes.
	var none lanes16
	for range 4 {
		compressParents16(&lv[0], &lv[0], &none, &guts.IV, guts.FlagParent)
	}
	var cv [8]uint32
	for w := range cv {
		cv[w] = lv[0][w][0]
	}
	return cv
}

// subtreeCV is the chaining value of the subtree over buf (never the root).
func subtreeCV(buf []byte, counter uint64, scratch *[guts.MaxSIMD * guts.ChunkSize]byte) [8]uint32 {
	if haveX16 && len(buf) == x16Bytes {
		return subtree256((*[x16Bytes]byte)(buf), counter)
	}
	return guts.ChainingValue(subtreeNode(buf, counter, scratch))
}

// subtreeNode is subtree, taking whole 256-chunk subtrees on the 16-lane
// kernel where there is one.
func subtreeNode(buf []byte, counter uint64, scratch *[guts.MaxSIMD * guts.ChunkSize]byte) guts.Node {
	chunks := (len(buf) + guts.ChunkSize - 1) / guts.ChunkSize
	if !haveX16 || chunks <= chunksPerBuf {
		return subtree(buf, counter, scratch)
	}
	left := 1 << (bits.Len(uint(chunks-1)) - 1)
	l := subtreeCV(buf[:left*guts.ChunkSize], counter, scratch)
	r := subtreeCV(buf[left*guts.ChunkSize:], counter+uint64(left), scratch)
	return guts.ParentNode(l, r, &guts.IV, 0)
}

// join combines the units' nodes over chunks [start, start+count) (in chunks) as
// the BLAKE3 tree does.
func join(units []guts.Node, start, count uint64) guts.Node {
	const unitChunks = parUnit / guts.ChunkSize
	if count <= unitChunks {
		return units[start/unitChunks]
	}
	left := uint64(1) << (bits.Len64(count-1) - 1)
	l := join(units, start, left)
	r := join(units, start+left, count-left)
	return guts.ParentNode(guts.ChainingValue(l), guts.ChainingValue(r), &guts.IV, 0)
}

// rootDigest finalizes the root node.
func rootDigest(n guts.Node) Digest {
	n.Flags |= guts.FlagRoot
	cv := guts.ChainingValue(n)
	var d Digest
	for i, w := range cv {
		binary.LittleEndian.PutUint32(d[4*i:], w)
	}
	return d
}

// hashFileParallel digests the size bytes of f on workers goroutines (every core
// when workers <= 0), reading each unit with ReadAt. f must not change while it
// is read.
func hashFileParallel(f io.ReaderAt, size int64, workers int) (Digest, error) {
	return hashUnits(size, workers, func() func(u int) ([]byte, error) {
		buf := make([]byte, parUnit)
		return func(u int) ([]byte, error) {
			off := int64(u) * parUnit
			n := int(min(parUnit, size-off))
			if _, err := f.ReadAt(buf[:n], off); err != nil {
				return nil, err
			}
			return buf[:n], nil
		}
	})
}

// hashMappedParallel digests data, a file mapped into memory, on every core
// without copying it. A file truncated while mapped makes the access fault; the
// fault is returned as an error instead of stopping the process.
func hashMappedParallel(data []byte, workers int) (Digest, error) {
	size := int64(len(data))
	return hashUnits(size, workers, func() func(u int) ([]byte, error) {
		return func(u int) ([]byte, error) {
			off := int64(u) * parUnit
			return data[off : off+min(parUnit, size-off)], nil
		}
	})
}

// hashUnits runs the units of a size-byte input on workers goroutines; each
// worker gets its own unit reader from newReader.
func hashUnits(size int64, workers int, newReader func() func(u int) ([]byte, error)) (Digest, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nUnits := int((size + parUnit - 1) / parUnit)
	units := make([]guts.Node, nUnits)
	errs := make([]error, nUnits)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, nUnits) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			debug.SetPanicOnFault(true)
			read := newReader()
			var scratch [guts.MaxSIMD * guts.ChunkSize]byte
			hashUnit := func(u int) (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("reading the file failed (was it truncated while hashed?): %v", r)
					}
				}()
				b, err := read(u)
				if err != nil {
					return err
				}
				units[u] = subtreeNode(b, uint64(int64(u)*parUnit/guts.ChunkSize), &scratch)
				return nil
			}
			for u := range next {
				errs[u] = hashUnit(u)
			}
		}()
	}
	for u := range nUnits {
		next <- u
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Digest{}, err
		}
	}
	chunks := uint64((size + guts.ChunkSize - 1) / guts.ChunkSize)
	return rootDigest(join(units, 0, chunks)), nil
}

// hashOpenFile digests an open regular file of the given size: on every core
// when it is large, else sequentially with a pooled buffer.
func hashOpenFile(f *os.File, size int64) (Digest, int64, error) {
	// On one core the tree pays only with the 16-lane kernel; without it the
	// sequential hasher's AVX2 kernel does more per CPU-second than the
	// tree's (docs/measurements.md).
	if size >= parMin && (runtime.GOMAXPROCS(0) > 1 || haveX16) {
		if data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED); err == nil {
			d, err := hashMappedParallel(data, 0)
			syscall.Munmap(data)
			if err != nil {
				return Digest{}, 0, err
			}
			return d, size, nil
		}
		// Not mappable (a file system without mmap): read it unit by unit.
		d, err := hashFileParallel(f, size, 0)
		if err != nil {
			return Digest{}, 0, err
		}
		// A file that grew while it was read is hashed as its size said; one
		// that shrank fails ReadAt with EOF.
		return d, size, nil
	}
	if size >= 0 && size <= smallFile {
		// A small file is read into a buffer of its own size (one byte more,
		// to see it end) rather than a pooled 256 KiB one.
		buf := make([]byte, size+1)
		n, err := io.ReadFull(f, buf)
		switch err {
		case io.EOF, io.ErrUnexpectedEOF:
			return HashBytes(buf[:n]), int64(n), nil
		case nil: // it grew since its size was taken: hash it all
			d, rest, err := HashReader(io.MultiReader(bytes.NewReader(buf), f))
			return d, rest, err
		default:
			return Digest{}, 0, err
		}
	}
	return HashReader(f)
}

// smallFile is the largest file hashed from one read into a buffer of its size.
const smallFile = 64 << 10

// HashFiles digests many files at once on every core (workers <= 0) and returns
// their digests and sizes in the order of paths; the first error stops nothing
// but is returned with its path.
func HashFiles(paths []string, workers int) ([]Digest, []int64, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ds := make([]Digest, len(paths))
	ns := make([]int64, len(paths))
	errs := make([]error, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ds[i], ns[i], errs[i] = HashFile(paths[i])
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", paths[i], err)
		}
	}
	return ds, ns, nil
}

// HashFile digests the file at path, without the stat cache; a large file is
// hashed on every core.
func HashFile(path string) (Digest, int64, error) {
	// Opened without blocking and refused unless regular: a FIFO or device
	// swapped in after a caller's stat is never read.
	f, st, err := OpenRegular(path)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	d, n, err := hashOpenFile(f, st.Size())
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	return d, n, nil
}
