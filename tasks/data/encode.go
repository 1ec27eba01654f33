package data

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/internal/units"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/tokenizer"
)

// encoderVersion changes every encode key when the document semantics or
// the writer change.
const encoderVersion = "1"

// encodeChunkBytes is the input a worker takes at a time. Small chunks keep
// every core busy to the end of a corpus and behind the in-order writer:
// measured on 2 cores with the Llama tokenizer (BenchmarkEncodeEndToEnd),
// 64 KiB chunks cost 13% over tokenizing alone where 1 MiB chunks cost 41%.
const encodeChunkBytes = 64 << 10

// bundledTokenizers are the Apache-2.0 tokenizer files shipped in the repo,
// used when no fetched copy exists (Llama's licence keeps it out).
var bundledTokenizers = map[string]string{
	"mistral": "tokenizer/testdata/mistral-7b-v0.1/tokenizer.json",
	"qwen":    "tokenizer/testdata/qwen-2.5/tokenizer.json",
}

// TokenizerSpec is a resolved tokenizer: a file, and the model it belongs
// to when it was named by model.
type TokenizerSpec struct {
	Path  string
	Model *models.Model
	EOD   int
}

// encodeOptions is how the encode targets run encode with tk: documents
// encoded whole, except a line too long to hold, which is streamed when the
// tokenizer can be cut exactly (tokenizer.Stream), so memory stays bounded by
// the longest pre-token whatever the document's length.
func encodeOptions(tk *tokenizer.Tokenizer, eod int32) encode.Options {
	opt := encode.Options{
		Encode:     func(dst []int32, text string) []int32 { return tk.AppendEncode(dst, text, true) },
		EOD:        eod,
		DType:      indexed.DTypeForVocab(tk.VocabSize()),
		ChunkBytes: encodeChunkBytes,
	}
	if tk.CanStream() == nil {
		opt.Stream = func() (encode.DocumentEncoder, error) {
			s, err := tk.NewStream(true, 0)
			if err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	return opt
}

// ResolveTokenizer turns a tokenizer argument (a tokenizer.json path, or a
// model name: llama, qwen, mistral, or a proxy) into a file and an
// end-of-document id.
func (o Options) ResolveTokenizer(arg string) (TokenizerSpec, error) {
	if m, err := models.Lookup(arg); err == nil {
		key := m.TokenizerKey
		candidates := []string{o.dataPath("tokenizers", key, "tokenizer.json")}
		if b, ok := bundledTokenizers[key]; ok {
			candidates = append(candidates, filepath.Join(o.Root, b))
		}
		for _, c := range candidates {
			if _, err := os.Stat(c); err == nil {
				return TokenizerSpec{Path: c, Model: &m, EOD: m.EOD}, nil
			}
		}
		return TokenizerSpec{}, fmt.Errorf("no tokenizer.json for %s: run `go run mage.go fetch` first (the %s tokenizer is gated: put HF_TOKEN=... in secrets.env), or pass a tokenizer.json path", arg, m.HFRepo)
	}
	if _, err := os.Stat(arg); err != nil {
		return TokenizerSpec{}, fmt.Errorf("tokenizer %q is neither a file nor a model name (known: %v): %w", arg, models.Names(), err)
	}
	spec := TokenizerSpec{Path: arg, EOD: -1}
	if v := o.EOD; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return TokenizerSpec{}, fmt.Errorf("EOD=%q is not a token id", v)
		}
		spec.EOD = n
	}
	return spec, nil
}

// eodNames are end-of-document tokens, in the order they are looked for in
// a tokenizer given by path (Llama 3, Qwen 2.5, sentencepiece models).
var eodNames = []string{"<|end_of_text|>", "<|endoftext|>", "</s>"}

func eodFor(tok *tokenizer.Tokenizer, spec TokenizerSpec) (int32, error) {
	if spec.EOD >= 0 {
		if spec.EOD >= tok.VocabSize() {
			return 0, fmt.Errorf("EOD %d is outside the vocabulary of %s (%d tokens)", spec.EOD, spec.Path, tok.VocabSize())
		}
		return int32(spec.EOD), nil
	}
	for _, name := range eodNames {
		if id, ok := tok.TokenID(name); ok {
			return int32(id), nil
		}
	}
	return 0, fmt.Errorf("cannot tell the end-of-document token of %s; set EOD=<id>", spec.Path)
}

// EncodeTask encodes in (JSONL) with tok into one dataset at outPrefix, or
// into outPrefix-train and outPrefix-test when split > 0. upstream, when
// set, produces in; more deps (the tokenizer's fetch) may follow.
func (o Options) EncodeTask(in string, tok TokenizerSpec, outPrefix string, split float64, upstream *dag.Task, more ...*dag.Task) *dag.Task {
	prefixes := []string{outPrefix}
	names := []string{"all"}
	if split > 0 {
		prefixes = []string{outPrefix + "-train", outPrefix + "-test"}
		names = []string{"train", "test"}
	}
	id := "encode " + rel(o.Root, in) + " " + rel(o.Root, tok.Path)
	if tok.Model != nil {
		id = "encode " + rel(o.Root, in) + " " + tok.Model.Name
	}
	t := &dag.Task{
		ID:     id + " -> " + rel(o.Root, outPrefix),
		Files:  []string{tok.Path},
		Params: map[string]string{"EOD": strconv.Itoa(tok.EOD), "split": strconv.FormatFloat(split, 'g', -1, 64)},
		Tools:  map[string]string{"encoder": encoderVersion},
	}
	if upstream != nil {
		t.Deps = []*dag.Task{upstream}
	} else {
		t.Files = append(t.Files, in)
	}
	t.Deps = append(t.Deps, more...)
	if upstream == nil {
		// Stat before anything opens it: a directory or a FIFO named as
		// the corpus is a mistake to name, not a tree to hash or a read
		// that never ends.
		t.Prepare = func(ctx context.Context) error {
			return checkRegularInput(in, "a JSONL corpus")
		}
	}
	for _, p := range prefixes {
		t.Outputs = append(t.Outputs, dag.Output{Path: indexed.BinPath(p), Share: true}, dag.Output{Path: indexed.IdxPath(p), Share: true}, dag.Output{Path: ManifestPath(p), Compress: true})
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		if err := os.MkdirAll(filepath.Dir(outPrefix), 0o755); err != nil {
			return err
		}
		tk, err := tokenizer.LoadForStreaming(ctx, tok.Path)
		if err != nil {
			return err
		}
		eod, err := eodFor(tk, tok)
		if err != nil {
			return err
		}
		dtype := indexed.DTypeForVocab(tk.VocabSize())
		opt := encodeOptions(tk, eod)
		var size int64
		if fi, err := os.Stat(in); err == nil {
			size = fi.Size()
		}
		prog := newProgress(x, o.Live(x.Log), t.ID, size)
		opt.Progress = prog.update
		var stats []encode.Stats
		if split > 0 {
			tr, te, err := encode.Split(ctx, []string{in}, prefixes[0], prefixes[1], split, opt)
			if err != nil {
				return err
			}
			stats = []encode.Stats{tr, te}
		} else {
			st, err := encode.File(ctx, []string{in}, prefixes[0], opt)
			if err != nil {
				return err
			}
			stats = []encode.Stats{st}
		}
		prog.done()
		inD, _, err := x.Cache.FileDigest(in)
		if err != nil {
			return err
		}
		tokD, _, err := x.Cache.FileDigest(tok.Path)
		if err != nil {
			return err
		}
		var manifests []Manifest
		for i, p := range prefixes {
			fp, err := storedFingerprint(x.Cache, p)
			if err != nil {
				return err
			}
			m := Manifest{Prefix: rel(o.Root, p), Input: rel(o.Root, in), InputDigest: inD, Tokenizer: rel(o.Root, tok.Path),
				TokenizerDigest: tokD, VocabSize: tk.VocabSize(), EOD: eod, DType: dtype.String(), Split: names[i],
				Fingerprint: fp, Stats: stats[i], EncoderVersion: encoderVersion}
			if split > 0 {
				m.TrainSplit = split
			}
			if tok.Model != nil {
				m.Model = tok.Model.Name
			}
			data, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				return err
			}
			if err := cache.WriteFileAtomic(ManifestPath(p), append(data, '\n'), 0o644); err != nil {
				return err
			}
			manifests = append(manifests, m)
		}
		x.SetMeta(manifests)
		return nil
	}
	return t
}

// checkRegularInput refuses an input that is not a regular file (after
// symlinks), saying what was expected.
func checkRegularInput(path, want string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("input %w", err)
	}
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a directory; give %s file", path, want)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s); give %s file", path, fi.Mode().Type(), want)
	}
	return nil
}

// A dataset's .bin and .idx are recorded as this process published them,
// so the runner stores exactly those files, never another run's.
func init() { indexed.OnPublish = cache.NotePublished }

// storedFingerprint stores the dataset's two files in the cache (which the
// runner would do next anyway, and now finds done) and computes the
// fingerprint from the digests that gives, so the files are read once, not
// once for the fingerprint and again for the cache.
func storedFingerprint(c *cache.Cache, prefix string) (indexed.Fingerprint, error) {
	var sums [2]cache.Digest
	for i, path := range []string{indexed.IdxPath(prefix), indexed.BinPath(prefix)} {
		d, _, err := c.PutOutput(path, false, true)
		if err != nil {
			return indexed.Fingerprint{}, err
		}
		sums[i] = d
	}
	ds, err := indexed.Open(prefix)
	if err != nil {
		return indexed.Fingerprint{}, err
	}
	defer ds.Close()
	return ds.FingerprintWith(sums[0], sums[1]), nil
}

// ReportEncode prints what an encode task wrote.
func (o Options) ReportEncode(t *dag.Task) {
	var ms []Manifest
	if err := t.Meta(&ms); err != nil {
		return
	}
	for _, m := range ms {
		fmt.Fprintf(o.Out, "%s: %d documents, %d sequences, %d tokens (%s), fingerprint %s\n",
			m.Prefix, m.Stats.Documents, m.Stats.Sequences, m.Stats.Tokens, m.DType, DatasetDigest(m.Fingerprint).Short())
	}
}

// progressEvery throttles progress reports: the live line redraws at most
// this often, so a report formatted sooner would be dropped.
const progressEvery = 250 * time.Millisecond

// progress prints throttled encode progress to the task's log: the share of
// the input read, documents, speed and the time left, every 2 s.
type progress struct {
	x     *dag.Exec
	live  LiveLine
	label string
	total int64 // input bytes; 0 when unknown
	start time.Time
	last  time.Time
	docs  int64
	bytes int64
}

func newProgress(x *dag.Exec, live LiveLine, label string, total int64) *progress {
	now := time.Now()
	return &progress{x: x, live: live, label: label, total: total, start: now, last: now}
}

func (p *progress) update(docs, bytes int64) {
	p.docs, p.bytes = docs, bytes
	if time.Since(p.last) < progressEvery {
		return
	}
	p.last = time.Now()
	p.live.Update(p.line(time.Since(p.start)))
}

// line is one progress report after elapsed.
func (p *progress) line(elapsed time.Duration) string {
	rate := float64(p.bytes) / elapsed.Seconds() // bytes per second
	read := units.Bytes(p.bytes) + " read"
	eta := ""
	if p.total > 0 {
		read = fmt.Sprintf("%.0f%% (%s of %s)", 100*float64(p.bytes)/float64(p.total), units.Bytes(p.bytes), units.Bytes(p.total))
		if rate > 0 && p.bytes < p.total {
			left := time.Duration(float64(p.total-p.bytes) / rate * float64(time.Second))
			eta = ", ETA " + left.Round(time.Second).String()
		}
	}
	return fmt.Sprintf("%s: %s, %d documents, %.1f MB/s%s", p.label, read, p.docs, rate/1e6, eta)
}

func (p *progress) done() {
	if time.Since(p.start) > 2*time.Second {
		secs := time.Since(p.start).Seconds()
		p.live.Done(fmt.Sprintf("%s: %d documents, %s in %.1fs (%.1f MB/s)", p.label, p.docs, units.Bytes(p.bytes), secs, float64(p.bytes)/1e6/secs))
		return
	}
	p.live.Clear()
}
