package data

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/models"
)

// DatasetPrefix is where the encode task writes a dataset and split
// (train or test) for a model: <DATA_DIR>/<dataset>-<model>-<split>.
func (o Options) DatasetPrefix(datasetName, model, split string) string {
	return o.encodePrefix(datasetName, model) + "-" + split
}

// encodePrefix is the prefix encode splits for a model into its -train and
// -test datasets: <DATA_DIR>/<dataset>-<model>.
func (o Options) encodePrefix(datasetName, model string) string {
	return o.dataPath(datasetName + "-" + model)
}

// VerifyDataset checks one encoded dataset: every format invariant, every
// token id below the tokenizer's vocabulary, and the files' digests against
// the manifest written when it was encoded. It returns the fingerprint.
func VerifyDataset(prefix string) (indexed.Fingerprint, error) {
	var fp indexed.Fingerprint
	// Stat before opening: a FIFO or a device in place of a dataset file
	// is refused, not read until the end of time.
	for _, p := range []string{ManifestPath(prefix), indexed.IdxPath(prefix), indexed.BinPath(prefix)} {
		if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
			return fp, fmt.Errorf("%s: %s is not a regular file (%s): remove it and run `go run mage.go encode`", prefix, p, fi.Mode().Type())
		}
	}
	data, err := cache.ReadFileLimit(context.Background(), ManifestPath(prefix), cache.LimitManifest)
	if errors.Is(err, fs.ErrNotExist) {
		return fp, fmt.Errorf("%s: not encoded yet (no %s): run `go run mage.go encode`", prefix, ManifestPath(prefix))
	}
	if err != nil {
		return fp, err
	}
	m, err := DecodeManifest(ManifestPath(prefix), data)
	if err != nil {
		return fp, err
	}
	d, err := indexed.Open(prefix)
	if err != nil {
		return fp, err
	}
	defer d.Close()
	vocab := m.VocabSize
	if m.Model != "" {
		if mm, err := models.Lookup(m.Model); err == nil && vocab == 0 {
			vocab = mm.Vocab
		}
	}
	if vocab <= 0 {
		return fp, fmt.Errorf("%s: manifest has no vocabulary size", ManifestPath(prefix))
	}
	if err := d.CheckTokens(vocab); err != nil {
		return fp, err
	}
	fp = d.Fingerprint()
	if fp.IdxBLAKE3 != m.Fingerprint.IdxBLAKE3 || fp.BinBLAKE3 != m.Fingerprint.BinBLAKE3 {
		return fp, fmt.Errorf("%s: files differ from what was encoded (recorded %s, found %s): re-run `go run mage.go encode` to restore them",
			prefix, DatasetDigest(m.Fingerprint).Short(), DatasetDigest(fp).Short())
	}
	return fp, nil
}

// VerifyData verifies every prefix, printing each fingerprint, and fails if
// any dataset is missing or wrong.
func (o Options) VerifyData(prefixes []string) error {
	bad := 0
	for _, p := range prefixes {
		fp, err := VerifyDataset(p)
		if err != nil {
			fmt.Fprintf(o.Out, "FAIL %v\n", err)
			bad++
			continue
		}
		fmt.Printf("%s %s\n", rel(o.Root, p), fp)
	}
	if bad > 0 {
		return fmt.Errorf("verify:data: %d of %d datasets failed", bad, len(prefixes))
	}
	return nil
}
