package gptorder

// RandomState is NumPy's legacy generator, numpy.random.RandomState(seed), as
// far as Megatron's GPT dataset uses it: an MT19937 seeded with an integer
// seed, and RandomState.shuffle of a one-dimensional array. Same seed, same
// stream, same permutation, bit for bit.
type RandomState struct {
	mt  [mtN]uint32
	pos int
}

const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// NewRandomState is numpy.random.RandomState(seed) for an integer seed in
// [0, 2^32): NumPy's legacy seeding is MT19937's init_genrand.
func NewRandomState(seed uint32) *RandomState {
	r := &RandomState{}
	r.mt[0] = seed
	for i := 1; i < mtN; i++ {
		prev := r.mt[i-1]
		r.mt[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.pos = mtN
	return r
}

func (r *RandomState) generate() {
	mag := [2]uint32{0, mtMatrixA}
	k := 0
	for ; k < mtN-mtM; k++ {
		y := r.mt[k]&mtUpperMask | r.mt[k+1]&mtLowerMask
		r.mt[k] = r.mt[k+mtM] ^ y>>1 ^ mag[y&1]
	}
	for ; k < mtN-1; k++ {
		y := r.mt[k]&mtUpperMask | r.mt[k+1]&mtLowerMask
		r.mt[k] = r.mt[k+mtM-mtN] ^ y>>1 ^ mag[y&1]
	}
	y := r.mt[mtN-1]&mtUpperMask | r.mt[0]&mtLowerMask
	r.mt[mtN-1] = r.mt[mtM-1] ^ y>>1 ^ mag[y&1]
	r.pos = 0
}

// Uint32 is the next tempered MT19937 output (RandomState.randint's raw
// 32-bit draw, random_raw of the legacy bit generator).
func (r *RandomState) Uint32() uint32 {
	if r.pos == mtN {
		r.generate()
	}
	y := r.mt[r.pos]
	r.pos++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// interval is NumPy's random_interval(max): a uniform value in [0, max] by
// masked rejection, drawing 32 bits while max fits in them and 64 bits
// (high word first) beyond.
func (r *RandomState) interval(max uint64) uint64 {
	if max == 0 {
		return 0
	}
	mask := max
	mask |= mask >> 1
	mask |= mask >> 2
	mask |= mask >> 4
	mask |= mask >> 8
	mask |= mask >> 16
	mask |= mask >> 32
	if max <= 0xffffffff {
		for {
			if v := uint64(r.Uint32()) & mask; v <= max {
				return v
			}
		}
	}
	for {
		hi := uint64(r.Uint32())
		if v := (hi<<32 | uint64(r.Uint32())) & mask; v <= max {
			return v
		}
	}
}

// Shuffle permutes s in place as RandomState.shuffle permutes a 1-D array:
// Fisher-Yates from the last element down, swapping element i with a
// uniform j in [0, i].
func Shuffle[T any](r *RandomState, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.interval(uint64(i))
		s[i], s[j] = s[j], s[i]
	}
}
