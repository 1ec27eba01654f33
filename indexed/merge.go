package indexed

import "fmt"

// Merge concatenates the datasets at inputs, in order, into outPrefix, as
// Megatron's builder does with add_index when preprocess_data.py merges its
// partitions: tokens and sequence lengths are appended, and each input's
// document indices after its leading 0 are shifted by the sequences before
// it. Encoding shards in parallel and merging them gives the same bytes as
// encoding the concatenated input at once. All inputs must share a dtype.
func Merge(outPrefix string, inputs []string) error {
	if len(inputs) == 0 {
		return fmt.Errorf("merge into %s: no input datasets given", outPrefix)
	}
	first, err := Open(inputs[0])
	if err != nil {
		return fmt.Errorf("merge into %s: %w", outPrefix, err)
	}
	dtype := first.DType()
	first.Close()
	w, err := NewWriter(outPrefix, dtype)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	for _, in := range inputs {
		d, err := Open(in)
		if err != nil {
			w.Abort()
			return fmt.Errorf("merge into %s: %w", outPrefix, err)
		}
		err = w.appendDataset(d)
		d.Close()
		if err != nil {
			w.Abort()
			return err
		}
	}
	return w.Finalize()
}
