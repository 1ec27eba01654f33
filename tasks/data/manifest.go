package data

import (
	"encoding/json"
	"fmt"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/indexed"
)

// manifestDigests are the BLAKE3 digests a Manifest records, by
// their JSON field names, read as text first so that a malformed one is
// reported with the field it is in (the digest types' own errors name the
// value, not the field).
type manifestDigests struct {
	Input       string `json:"input_blake3"`
	Tokenizer   string `json:"tokenizer_blake3"`
	Fingerprint struct {
		Digest    string `json:"digest"`
		IdxBLAKE3 string `json:"idx_blake3"`
		BinBLAKE3 string `json:"bin_blake3"`
	} `json:"fingerprint"`
}

// DecodeManifest reads the manifest at path (its bytes in data). A manifest
// whose digests are not whole BLAKE3-256 digests (cut short, edited by
// hand, written by something else) is an error naming the file and the
// field, never a dataset fingerprint that a cache folder name or a result
// would carry. A run reads its manifest once (trainRun.prepare in package
// tasks) and passes the value on.
func DecodeManifest(path string, data []byte) (Manifest, error) {
	var raw manifestDigests
	if err := json.Unmarshal(data, &raw); err != nil {
		return Manifest{}, manifestError(path, err)
	}
	for _, f := range []struct{ name, value string }{
		{"input_blake3", raw.Input},
		{"tokenizer_blake3", raw.Tokenizer},
		{"fingerprint.digest", raw.Fingerprint.Digest},
		{"fingerprint.idx_blake3", raw.Fingerprint.IdxBLAKE3},
		{"fingerprint.bin_blake3", raw.Fingerprint.BinBLAKE3},
	} {
		if f.value == "" {
			return Manifest{}, manifestError(path, fmt.Errorf("field %s is missing", f.name))
		}
		if _, err := cache.ParseDigest(f.value); err != nil {
			return Manifest{}, manifestError(path, fmt.Errorf("field %s: %w", f.name, err))
		}
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, manifestError(path, err)
	}
	return m, nil
}

func manifestError(path string, err error) error {
	return fmt.Errorf("dataset manifest %s: %w; encode the dataset again (`go run mage.go encode`) to rewrite it", path, err)
}

// DatasetDigest is a dataset fingerprint's digest as the cache's digest
// type, for its Short form (the per-dataset folder names): the same 32
// bytes, converted, not parsed.
func DatasetDigest(fp indexed.Fingerprint) cache.Digest { return cache.Digest(fp.Digest) }

// Manifest is written next to every encoded dataset: what it was
// made from and its fingerprint, so verify:data can check the files.
type Manifest struct {
	Prefix          string       `json:"prefix"`
	Input           string       `json:"input"`
	InputDigest     cache.Digest `json:"input_blake3"`
	Tokenizer       string       `json:"tokenizer"`
	TokenizerDigest cache.Digest `json:"tokenizer_blake3"`
	Model           string       `json:"model,omitempty"`
	VocabSize       int          `json:"vocab_size"`
	EOD             int32        `json:"eod"`
	DType           string       `json:"dtype"`
	Split           string       `json:"split"` // "all", "train" or "test"
	TrainSplit      float64      `json:"train_split,omitempty"`
	// Fingerprint holds the BLAKE3 of .idx and .bin and their combination,
	// the dataset fingerprint results record.
	Fingerprint    indexed.Fingerprint `json:"fingerprint"`
	Stats          encode.Stats        `json:"stats"`
	EncoderVersion string              `json:"encoder_version"`
}

// ManifestPath is the sidecar of a dataset prefix.
func ManifestPath(prefix string) string { return prefix + ".rival.json" }
