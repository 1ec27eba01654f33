package hub

import (
	"fmt"
	"sort"
	"strings"
)

// Entry is one pinned source in the catalogue: a repository at a revision and the files Rival
// needs from it. docs/fetch.md records where each revision comes from.
type Entry struct {
	Name     string // Rival's short name: llama, qwen, mistral (models); bc, c4 (datasets)
	Type     RepoType
	Repo     string
	Revision string
	Files    []string
	Format   Format // datasets: the shards' format; models: FormatAuto (not documents)
	Gated    bool   // needs HF_TOKEN with the licence accepted
	// Why, for a revision that is a named ref rather than a commit SHA, says why it is not pinned.
	Why string
}

// Pinned reports whether the revision is a full commit SHA.
func (e Entry) Pinned() bool { return isCommitSHA(e.Revision) }

// Requests lists one Request per file of the entry.
func (e Entry) Requests() []Request {
	out := make([]Request, 0, len(e.Files))
	for _, f := range e.Files {
		out = append(out, Request{Type: e.Type, Repo: e.Repo, Revision: e.Revision, File: f})
	}
	return out
}

// tokenizerFiles are what encode needs from each model: the tokenizer, its special-token
// settings, and config.json for the EOD id and model constants.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "config.json"}

// TokenizerEntry is the entry of a model's tokenizer files at a pinned revision of its repository;
// the pins are model facts and live with each model (models.Model.HFRevision).
func TokenizerEntry(name, repo, revision string, gated bool) Entry {
	return Entry{Name: name, Type: Model, Repo: repo, Revision: revision, Files: append([]string(nil), tokenizerFiles...), Gated: gated}
}

// catalog holds the datasets Rival fetches.
var catalog = []Entry{
	{
		// The repo's main branch holds only a loading script (no data); the hub's own parquet
		// conversion serves the text.
		Name: "bc", Type: Dataset, Repo: "bookcorpus/bookcorpus",
		Revision: "refs/convert/parquet",
		Files:    []string{"plain_text/train/0000.parquet"},
		Format:   FormatParquet,
		Why:      "refs/convert/parquet is rewritten by the hub's parquet converter and its past commits are not kept; the file is verified by its LFS sha256 instead",
	},
	{
		Name: "c4", Type: Dataset, Repo: "allenai/c4",
		Revision: "1588ec454efa1a09f29cd18ddd04fe05fc8653a2",
		Files:    []string{"en/c4-train.00000-of-01024.json.gz"},
		Format:   FormatJSONLGzip,
	},
}

// Catalog returns a copy of every dataset entry.
func Catalog() []Entry {
	out := make([]Entry, len(catalog))
	for i, e := range catalog {
		e.Files = append([]string(nil), e.Files...)
		out[i] = e
	}
	return out
}

// Lookup finds a dataset entry by its short name.
func Lookup(name string) (Entry, error) {
	for _, e := range Catalog() {
		if e.Name == name {
			return e, nil
		}
	}
	var names []string
	for _, e := range catalog {
		names = append(names, e.Name)
	}
	sort.Strings(names)
	return Entry{}, fmt.Errorf("hub catalogue: no entry %q (known: %s)", name, strings.Join(names, ", "))
}
