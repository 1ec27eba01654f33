package training

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/result"
)

// TestPrefix is the encoded test split beside a train split (data.Options.DatasetPrefix names them
// <prefix>-train and <prefix>-test).
func TestPrefix(trainPrefix string) (string, error) {
	base, ok := strings.CutSuffix(trainPrefix, "-train")
	if !ok {
		return "", fmt.Errorf("held-out evaluation: %s is not an encoded train split (<prefix>-train), so its test split is unknown; encode with TRAIN_SPLIT below 1", trainPrefix)
	}
	return base + "-test", nil
}

// writeHeldOut writes the run's held-out set when it evaluates (core.Fair.EvalIntervalSamples) and
// returns what the result records; nil when it does not.
func (r *trainRun) writeHeldOut() (*result.HeldOut, error) {
	f := r.in.Workload.Fair
	if f.EvalIntervalSamples == 0 {
		return nil, nil
	}
	test, err := TestPrefix(r.absPrefix)
	if err != nil {
		return nil, fmt.Errorf("train %s: %w", r.name, err)
	}
	h, digest, err := WriteHeldOut(test, r.cacheDir, f)
	if err != nil {
		return nil, fmt.Errorf("train %s: %w", r.name, err)
	}
	h.Evaluated = heldOutEvaluated(r.launch)
	r.launch.HeldOut = digest
	return h, nil
}

// heldOutEvaluated says how a launch evaluates the held-out set (core.Launch.Evaluation), or that it
// does not yet.
func heldOutEvaluated(l core.Launch) string {
	if l.Evaluation != "" {
		return l.Evaluation
	}
	if l.NoEvaluation != "" {
		return l.NoEvaluation
	}
	return "not evaluated: " + l.Framework + " launches do not evaluate Rival's held-out set yet (their own validation does not restart from the first sequence at each evaluation), so this run's held-out loss is not comparable and none is recorded"
}

// WriteHeldOut writes the held-out set of f into cacheDir as core.HeldOutName: one document of
// EvalSamples·SL+1 tokens, the test split's first documents joined in file order (with their EOD
// tokens), so that window k of SL+1 tokens from k·SL is held-out sequence k whatever order a
// framework reads the windows in. It returns what a result records and the SHA-256 of the
// sequences (each as SL+1 little-endian int64 tokens, in order) a preflight must match.
func WriteHeldOut(testPrefix, cacheDir string, f core.Fair) (*result.HeldOut, *core.SampleDigest, error) {
	n, sl := f.EvalSamples, f.SL
	need := int64(n)*int64(sl) + 1
	ds, err := indexed.Open(testPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("held-out set: %w (it is cut from the encoded test split: encode with TRAIN_SPLIT below 1)", err)
	}
	defer ds.Close()
	if ds.Tokens() < need {
		return nil, nil, fmt.Errorf("held-out set: %s holds %d tokens, and EVAL_SAMPLES %d sequences of SL %d need %d: lower EVAL_SAMPLES, or give the test split more documents (DATA_SAMPLES, TRAIN_SPLIT)",
			testPrefix, ds.Tokens(), n, sl, need)
	}
	tokens := make([]int32, 0, need)
	for i := 0; int64(len(tokens)) < need; i++ {
		if tokens, err = ds.AppendSequence(tokens, i); err != nil {
			return nil, nil, fmt.Errorf("held-out set: %w", err)
		}
	}
	tokens = tokens[:need]
	prefix := filepath.Join(cacheDir, core.HeldOutName(n, sl))
	w, err := indexed.NewWriter(prefix, ds.DType())
	if err != nil {
		return nil, nil, fmt.Errorf("held-out set: %w", err)
	}
	if err := w.AddDocument(tokens); err != nil {
		w.Abort()
		return nil, nil, fmt.Errorf("held-out set: %w", err)
	}
	if err := w.Finalize(); err != nil {
		return nil, nil, fmt.Errorf("held-out set: %w", err)
	}
	b3, sha := heldOutDigests(tokens, n, sl)
	h := &result.HeldOut{Source: testPrefix, Sequences: n, SequenceLength: sl, IntervalSamples: f.EvalIntervalSamples, BLAKE3: b3, SHA256: sha}
	return h, &core.SampleDigest{Samples: int64(n), SHA256: sha}, nil
}

// heldOutDigests are the BLAKE3 and SHA-256 of the n windows of sl+1 tokens from k·sl, each token
// as a little-endian int64: the bytes the preflights digest.
func heldOutDigests(tokens []int32, n, sl int) (string, string) {
	hs, hb := sha256.New(), blake3.New()
	buf := make([]byte, 8*(sl+1))
	for k := 0; k < n; k++ {
		for j, t := range tokens[k*sl : k*sl+sl+1] {
			binary.LittleEndian.PutUint64(buf[8*j:], uint64(int64(t)))
		}
		hs.Write(buf)
		hb.Write(buf)
	}
	return hex.EncodeToString(hb.Sum(nil)), hex.EncodeToString(hs.Sum(nil))
}
