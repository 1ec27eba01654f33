package tasks

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

// datasetPrefix is where the encode task writes a dataset and split
// (train or test) for a model: <DATA_DIR>/<dataset>-<model>-<split>.
func (w *Workspace) datasetPrefix(datasetName, model, split string) string {
	return w.encodePrefix(datasetName, model) + "-" + split
}

// encodePrefix is the prefix encode splits for a model into its -train and
// -test datasets: <DATA_DIR>/<dataset>-<model>.
func (w *Workspace) encodePrefix(datasetName, model string) string {
	return w.path("DATA_DIR", datasetName+"-"+model)
}

// ConfiguredDatasets lists the dataset prefixes config.env names: DATASET
// for every model in MODELS, train and test.
func (w *Workspace) ConfiguredDatasets() []string {
	var out []string
	for _, m := range w.Config.list("MODELS") {
		for _, s := range []string{"train", "test"} {
			out = append(out, w.datasetPrefix(w.Config.get("DATASET"), m, s))
		}
	}
	return out
}

// verifyDataset checks one encoded dataset: every format invariant, every
// token id below the tokenizer's vocabulary, and the files' digests against
// the manifest written when it was encoded. It returns the fingerprint.
func verifyDataset(prefix string) (indexed.Fingerprint, error) {
	var fp indexed.Fingerprint
	// Stat before opening: a FIFO or a device in place of a dataset file
	// is refused, not read until the end of time.
	for _, p := range []string{manifestPath(prefix), indexed.IdxPath(prefix), indexed.BinPath(prefix)} {
		if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
			return fp, fmt.Errorf("%s: %s is not a regular file (%s): remove it and run `go run mage.go encode`", prefix, p, fi.Mode().Type())
		}
	}
	data, err := cache.ReadFileLimit(context.Background(), manifestPath(prefix), cache.LimitManifest)
	if errors.Is(err, fs.ErrNotExist) {
		return fp, fmt.Errorf("%s: not encoded yet (no %s): run `go run mage.go encode`", prefix, manifestPath(prefix))
	}
	if err != nil {
		return fp, err
	}
	m, err := decodeManifest(manifestPath(prefix), data)
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
		return fp, fmt.Errorf("%s: manifest has no vocabulary size", manifestPath(prefix))
	}
	if err := d.CheckTokens(vocab); err != nil {
		return fp, err
	}
	fp = d.Fingerprint()
	if fp.IdxBLAKE3 != m.Fingerprint.IdxBLAKE3 || fp.BinBLAKE3 != m.Fingerprint.BinBLAKE3 {
		return fp, fmt.Errorf("%s: files differ from what was encoded (recorded %s, found %s): re-run `go run mage.go encode` to restore them",
			prefix, datasetDigest(m.Fingerprint).Short(), datasetDigest(fp).Short())
	}
	return fp, nil
}

// VerifyData verifies every prefix, printing each fingerprint, and fails if
// any dataset is missing or wrong.
func (w *Workspace) VerifyData(prefixes []string) error {
	bad := 0
	for _, p := range prefixes {
		fp, err := verifyDataset(p)
		if err != nil {
			w.printf("FAIL %v\n", err)
			bad++
			continue
		}
		fmt.Printf("%s %s\n", rel(w.Root, p), fp)
	}
	if bad > 0 {
		return fmt.Errorf("verify:data: %d of %d datasets failed", bad, len(prefixes))
	}
	return nil
}
