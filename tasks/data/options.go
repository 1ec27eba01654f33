package data

import (
	"io"
	"path/filepath"
	"strconv"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/hub"
)

// Options is what the data targets know of the workspace: package tasks
// fills it from config.env and the environment. Values that enter a cache
// key are kept as configured (the filter minimums as written), so a key
// never depends on how they were parsed.
type Options struct {
	Root    string    // the workspace root: task IDs and manifests name files relative to it
	DataDir string    // DATA_DIR, absolute
	Out     io.Writer // where reports go

	Dataset    string   // DATASET
	Samples    int      // DATA_SAMPLES
	Models     []string // MODELS
	TrainSplit float64  // TRAIN_SPLIT

	// FilterMinChars and FilterMinWords are FILTER_MIN_CHARS and
	// FILTER_MIN_WORDS as configured.
	FilterMinChars, FilterMinWords string

	// EOD is the EOD setting, the end-of-document id of a tokenizer given
	// by path ("" to look it up in the tokenizer).
	EOD string

	// Hub opens a hub client (HF_ENDPOINT, the token) when a fetch runs.
	Hub func() (*hub.Client, error)
	// Documents reads the downloaded shards (parquet through the rival-parquet program).
	Documents hub.Documents

	// Live makes the live progress line an encode writes to its log.
	Live func(io.Writer) LiveLine
}

// LiveLine is a progress line redrawn in place on a terminal, and written
// once, closed, elsewhere.
type LiveLine interface {
	Update(s string)
	Done(s string)
	Clear()
}

// dataPath is a path under DATA_DIR.
func (o Options) dataPath(elem ...string) string {
	return filepath.Join(append([]string{o.DataDir}, elem...)...)
}

func rel(root, p string) string { return dag.RelPath(root, p) }

// atoi reads a numeric setting validated when config.env was loaded.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
