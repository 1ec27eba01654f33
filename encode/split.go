package encode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/rivalbench/rival/safefile"
)

// splitScale is the resolution TRAIN_SPLIT is read at: six decimal places,
// so that 0.8 means exactly 800000/1000000 and the split never depends on
// how a decimal fraction rounds in binary floating point.
const splitScale = 1_000_000

// TrainDocuments is the number of documents, out of n, that go to the train
// output: floor(n × split), computed in integers with split rounded to six
// decimal places. The rest, in input order, go to test.
func TrainDocuments(n int64, split float64) (int64, error) {
	if math.IsNaN(split) || split < 0 || split > 1 {
		return 0, fmt.Errorf("train split %v must be between 0 and 1 (the fraction of documents that go to train)", split)
	}
	if n < 0 || n > math.MaxInt64/splitScale {
		return 0, fmt.Errorf("train split: document count %d out of range", n)
	}
	return n * int64(math.Round(split*splitScale)) / splitScale, nil
}

// CountDocuments counts the documents in inputs the way the encoder sees
// them: one per line, plus a final line that lacks its newline. It reads
// the files once, without parsing JSON.
func CountDocuments(inputs []string) (int64, error) {
	var total int64
	buf := make([]byte, 1<<20)
	for _, path := range inputs {
		f, _, err := safefile.Open(path)
		if err != nil {
			return 0, fmt.Errorf("count documents: %w", err)
		}
		last := byte('\n')
		for {
			n, err := f.Read(buf)
			if n > 0 {
				total += int64(bytes.Count(buf[:n], []byte{'\n'}))
				last = buf[n-1]
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return 0, fmt.Errorf("count documents: read %s: %w", path, err)
			}
		}
		f.Close()
		if last != '\n' {
			total++
		}
	}
	return total, nil
}
