package gptorder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/rivalbench/rival/safefile"
)

// The three index files, as Megatron names its own cache files' suffixes.
const (
	DocumentFile = "document_index.npy"
	SampleFile   = "sample_index.npy"
	ShuffleFile  = "shuffle_index.npy"
)

// Base is the file-name stem of an order's index files inside a dataset's
// cache folder (one folder per dataset fingerprint): seed, sequence length,
// samples and the extra token, so that every request has its own files.
// Rival's trainers derive the same stem (frameworks/fsdp/train.py,
// frameworks/titan/rival_titan.py).
func (o Order) Base() string {
	return fmt.Sprintf("rival-gptorder-seed%d-sl%d-n%d-x%d", o.Seed, o.SeqLen, o.NumSamples, o.extra())
}

// Paths are the document, sample and shuffle index files of o in dir.
func (o Order) Paths(dir string) (doc, sample, shuffle string) {
	b := filepath.Join(dir, o.Base())
	return b + "-" + DocumentFile, b + "-" + SampleFile, b + "-" + ShuffleFile
}

// Write stores the indices in dir as .npy files with Megatron's dtypes
// (int32 document index; int32 or int64 sample index, shape (samples+1, 2);
// uint32 or int64 shuffle index), each written to a temporary name, synced and
// renamed, the shuffle index last so that its presence means all three are
// whole.
func (x *Indices) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gptorder: %w", err)
	}
	docPath, samplePath, shufflePath := x.order.Paths(dir)
	doc := make([]int64, len(x.Document))
	for i, d := range x.Document {
		doc[i] = int64(d)
	}
	sdt, shdt := npyInt32, npyUint32
	if x.SampleWide {
		sdt = npyInt64
	}
	if x.ShuffleWide {
		shdt = npyInt64
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{docPath, encodeNPY(npyInt32, []int{len(doc)}, doc)},
		{samplePath, encodeNPY(sdt, []int{len(x.Sample) / 2, 2}, x.Sample)},
		{shufflePath, encodeNPY(shdt, []int{len(x.Shuffle)}, x.Shuffle)},
	} {
		if err := writeAtomic(f.path, f.data); err != nil {
			return err
		}
	}
	return nil
}

// Read loads the indices of o from dir, checking shapes and that every
// reference stays inside the arrays it points into.
func Read(ctx context.Context, dir string, o Order) (*Indices, error) {
	docPath, samplePath, shufflePath := o.Paths(dir)
	load := func(path string, dims int) ([]int64, []int, error) {
		data, err := safefile.ReadFile(ctx, path, safefile.LimitSampleIndex)
		if err != nil {
			return nil, nil, fmt.Errorf("gptorder: %w (Rival writes it before training; remove the file and train again)", err)
		}
		v, shape, err := decodeNPY(path, data)
		if err == nil && len(shape) != dims {
			err = fmt.Errorf("%s: %d dimensions, want %d", path, len(shape), dims)
		}
		return v, shape, err
	}
	doc, _, err := load(docPath, 1)
	if err != nil {
		return nil, err
	}
	sample, shape, err := load(samplePath, 2)
	if err != nil {
		return nil, err
	}
	if shape[1] != 2 || shape[0] < 2 {
		return nil, fmt.Errorf("%s: shape %v, want (samples+1, 2)", samplePath, shape)
	}
	shuffle, _, err := load(shufflePath, 1)
	if err != nil {
		return nil, err
	}
	x := &Indices{order: o, Sample: sample, Shuffle: shuffle, Document: make([]int32, len(doc))}
	for i, d := range doc {
		if d < 0 || d > math.MaxInt32 {
			return nil, fmt.Errorf("%s: element %d is %d, not a sequence id", docPath, i, d)
		}
		x.Document[i] = int32(d)
	}
	for i := 0; i < len(sample); i += 2 {
		if sample[i] < 0 || sample[i] >= int64(len(doc)) || sample[i+1] < 0 {
			return nil, fmt.Errorf("%s: row %d (%d, %d) points outside the %d-entry document index", samplePath, i/2, sample[i], sample[i+1], len(doc))
		}
	}
	for i, s := range shuffle {
		if s < 0 || s >= x.Samples() {
			return nil, fmt.Errorf("%s: element %d is %d, outside the %d samples", shufflePath, i, s, x.Samples())
		}
	}
	if int64(len(shuffle)) < o.NumSamples {
		return nil, fmt.Errorf("%s: %d samples, the run needs %d", shufflePath, len(shuffle), o.NumSamples)
	}
	return x, nil
}

func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("gptorder: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("gptorder: writing %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("gptorder: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("gptorder: writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("gptorder: writing %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return errors.Join(fmt.Errorf("gptorder: publishing %s", path), err)
	}
	return nil
}
