// Package gptorder builds the sample order of Megatron Core's GPTDataset: its
// document index, sample index and shuffle index for a seed, a sequence length
// and a number of samples, equal element for element to the arrays Megatron
// builds (megatron/core/datasets/gpt_dataset.py and helpers.cpp's
// build_sample_idx, identical at Megatron-LM b0cc2706, 3bec9aa9, d0b3b775 and
// d3528a21: both stacks' trees), NumPy's
// RandomState permutations included. Frameworks that do not load data through
// Megatron read their samples in this order, so every framework trains on the
// same token sequences in the same order (docs/sample-order.md).
//
// Build computes the indices from a dataset's sequence lengths; Indices.Sample
// reads one sample's tokens as GPTDataset.__getitem__ does; Write and Read
// keep the indices as .npy files that NumPy loads; Digest is BLAKE3 over the
// first samples in training order, recorded in every result.
//
// It imports nothing from Rival but indexed.
package gptorder

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Order says which samples Megatron draws for a training run.
type Order struct {
	Seed       uint32 // --seed (GPTDatasetConfig.random_seed)
	SeqLen     int    // --seq-length
	NumSamples int64  // train_iters × global batch size (get_train_valid_test_num_samples)
	// AddExtraToken draws SeqLen+1 tokens per sample so that inputs and labels
	// are both SeqLen long (GPTDatasetConfig.add_extra_token_to_sequence,
	// true in Megatron's pretraining).
	AddExtraToken bool
}

// Indices are GPTDataset's three arrays for the train split.
type Indices struct {
	// Document is the document index: every exposed sequence id once per
	// epoch, shuffled (int32, as Megatron keeps it).
	Document []int32
	// Sample is the sample index, (samples+1) × 2 flattened: for each sample
	// boundary, the position in Document and the token offset in that
	// sequence.
	Sample []int64
	// Shuffle maps a sample's place in training order to its row of Sample.
	Shuffle []int64
	// Wide says Megatron would hold Sample in int64 (build_sample_idx_int64)
	// rather than int32, and Shuffle in int64 rather than uint32.
	SampleWide, ShuffleWide bool

	Epochs             int
	TokensPerEpoch     int64
	SeparateFinalEpoch bool
	order              Order
}

// Order is the request the indices were built for.
func (x *Indices) Order() Order { return x.order }

// Samples is the number of samples the sample index holds (len(GPTDataset)).
func (x *Indices) Samples() int64 { return int64(len(x.Sample))/2 - 1 }

// SampleLen is the number of tokens each sample holds: SeqLen, plus one when
// AddExtraToken.
func (o Order) SampleLen() int {
	if o.AddExtraToken {
		return o.SeqLen + 1
	}
	return o.SeqLen
}

func (o Order) extra() int64 {
	if o.AddExtraToken {
		return 1
	}
	return 0
}

// TrainRange is the range of sequence ids Megatron's train split exposes for
// a --split string ("100,0,0", "99,1,0", "969, 30, 1") over n sequences:
// BlendedMegatronDatasetBuilder's int(round(fraction × n)) book-ends.
func TrainRange(split string, n int) (beg, end int, err error) {
	fields := regexp.MustCompile(`[.0-9]+`).FindAllString(split, -1)
	if len(fields) == 0 || len(fields) > 3 {
		return 0, 0, fmt.Errorf("gptorder: split %q: want up to three weights such as 100,0,0", split)
	}
	w := make([]float64, 3)
	var sum float64
	for i, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 0 {
			return 0, 0, fmt.Errorf("gptorder: split %q: weight %q is not a non-negative number", split, f)
		}
		w[i] = v
	}
	for _, v := range w {
		sum += v
	}
	if sum == 0 {
		return 0, 0, fmt.Errorf("gptorder: split %q: the weights sum to zero", split)
	}
	// normalize(), then the first book-end pair of convert_split_vector_to_split_matrix.
	lo, hi := 0.0, 0.0+w[0]/sum
	beg = int(math.RoundToEven(lo * float64(n)))
	end = int(math.RoundToEven(hi * float64(n)))
	if end <= beg {
		return 0, 0, fmt.Errorf("gptorder: split %q leaves the train split of %d sequences empty", split, n)
	}
	return beg, end, nil
}

// Build computes the document, sample and shuffle indices Megatron's
// GPTDataset builds for the sequences [beg, end) of a dataset whose sequence
// lengths are lengths, as _build_document_sample_shuffle_indices does for the
// train split (the last partial sample dropped).
func Build(lengths []int32, beg, end int, o Order) (*Indices, error) {
	switch {
	case o.SeqLen < 2:
		return nil, fmt.Errorf("gptorder: sequence length %d: Megatron needs at least 2", o.SeqLen)
	case o.NumSamples < 1:
		return nil, fmt.Errorf("gptorder: %d samples requested: want at least 1 (train_iters × global batch size)", o.NumSamples)
	case beg < 0 || end > len(lengths) || beg >= end:
		return nil, fmt.Errorf("gptorder: sequence range [%d, %d) is empty or outside the dataset's %d sequences", beg, end, len(lengths))
	case end-beg > math.MaxInt32:
		return nil, fmt.Errorf("gptorder: %d sequences: Megatron's document index is int32", end-beg)
	}
	x := &Indices{order: o}
	var maxLen int32 // over the whole dataset, as helpers.build_sample_idx takes sizes.max()
	for i, l := range lengths {
		if l < 0 {
			return nil, fmt.Errorf("gptorder: sequence %d has negative length %d", i, l)
		}
		maxLen = max(maxLen, l)
		if i >= beg && i < end {
			x.TokensPerEpoch += int64(l)
		}
	}
	if x.TokensPerEpoch <= 1 {
		return nil, fmt.Errorf("gptorder: the split holds %d tokens: not enough for one sample", x.TokensPerEpoch)
	}
	// _get_num_epochs.
	x.Epochs = 1
	requested := o.NumSamples*int64(o.SeqLen) + o.extra()
	for tokens := x.TokensPerEpoch; tokens < requested; tokens += x.TokensPerEpoch {
		x.Epochs++
	}
	var sansFinal int64
	if x.Epochs > 1 {
		sansFinal = (int64(x.Epochs-1)*x.TokensPerEpoch - o.extra()) / int64(o.SeqLen)
		fromFinal := o.NumSamples - sansFinal
		perEpoch := (x.TokensPerEpoch - o.extra()) / int64(o.SeqLen)
		if fromFinal < 0 || fromFinal > perEpoch+1 {
			return nil, fmt.Errorf("gptorder: %d samples from the final epoch of %d: Megatron's own assertion fails", fromFinal, perEpoch)
		}
		// int(0.80 * num_samples_per_epoch): the float product, truncated.
		x.SeparateFinalEpoch = fromFinal < int64(0.80*float64(perEpoch))
	}
	rs := NewRandomState(o.Seed)
	x.Document = documentIndex(beg, end, x.Epochs, rs, x.SeparateFinalEpoch)

	var err error
	if x.Sample, err = sampleIndex(lengths, x.Document, o, x.Epochs, x.TokensPerEpoch); err != nil {
		return nil, err
	}
	x.SampleWide = int64(max(int64(len(x.Document)), int64(maxLen))) > math.MaxInt32
	total := x.Samples()
	x.ShuffleWide = total >= math.MaxUint32-1
	if x.SeparateFinalEpoch {
		x.Shuffle = shuffleIndex(sansFinal, total, rs)
	} else {
		x.Shuffle = shuffleIndex(total, total, rs)
	}
	return x, nil
}

// documentIndex is _build_document_index: the range repeated once per epoch,
// shuffled as one array, or with the final epoch shuffled on its own.
func documentIndex(beg, end, epochs int, rs *RandomState, separateFinal bool) []int32 {
	if !separateFinal || epochs == 1 {
		n := end - beg
		d := make([]int32, 0, epochs*n)
		for range epochs {
			for i := beg; i < end; i++ {
				d = append(d, int32(i))
			}
		}
		Shuffle(rs, d)
		return d
	}
	first := documentIndex(beg, end, epochs-1, rs, false)
	return append(first, documentIndex(beg, end, 1, rs, false)...)
}

// sampleIndex is helpers.cpp's build_sample_idx with drop_last_partial_sequence
// true (the train split): the boundaries of SeqLen (+1) token windows over the
// documents in Document order, consecutive windows sharing the extra token.
func sampleIndex(lengths []int32, doc []int32, o Order, epochs int, tokensPerEpoch int64) ([]int64, error) {
	extra := o.extra()
	numSamples := (int64(epochs)*tokensPerEpoch - extra) / int64(o.SeqLen)
	s := make([]int64, 0, 2*(numSamples+1))
	var di, off int64
	s = append(s, di, off)
	for k := int64(1); k <= numSamples; k++ {
		remaining := int64(o.SeqLen) + extra
		for remaining != 0 {
			length := int64(lengths[doc[di]]) - off
			remaining -= length
			if remaining <= 0 {
				off += remaining + length - extra
				remaining = 0
			} else {
				if di == int64(len(doc))-1 {
					if k != numSamples {
						return nil, fmt.Errorf("gptorder: the documents ran out at sample %d of %d", k, numSamples)
					}
					off = int64(lengths[doc[di]]) - extra
					break
				}
				di++
				off = 0
			}
		}
		s = append(s, di, off)
	}
	return s, nil
}

// shuffleIndex is _build_shuffle_index: [0, n) shuffled, then [n, total)
// shuffled after it when the final epoch stands apart.
func shuffleIndex(n, total int64, rs *RandomState) []int64 {
	s := make([]int64, total)
	for i := range s {
		s[i] = int64(i)
	}
	Shuffle(rs, s[:n])
	if n < total {
		Shuffle(rs, s[n:])
	}
	return s
}
