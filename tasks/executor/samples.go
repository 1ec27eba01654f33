package executor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
)

// SamplesPrefix starts the line where a preflight prints its digest of the first samples its
// framework's own data path reads.
const SamplesPrefix = "preflight samples: "

// ReadSamples reads the JSON after SamplesPrefix.
func ReadSamples(j string) (*core.SampleDigest, error) {
	var s core.SampleDigest
	dec := json.NewDecoder(strings.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("sample_order: the preflight's samples line %q does not parse: %w", j, err)
	}
	if s.Samples <= 0 || len(s.SHA256) != 64 {
		return nil, fmt.Errorf("sample_order: the preflight's samples line %q holds no sample count or SHA-256", j)
	}
	return &s, nil
}

// CompareSamples compares a preflight's digest (got; nil: it printed none) with Rival's of the same
// first samples of Megatron's order (want; nil: no check): a trainer that would read other token
// sequences, or digested another count of them, must not train, and neither may one whose preflight
// did not digest them (every framework's preflight does when the dataset is there, so a missing line
// means its data path was not checked).
func CompareSamples(want, got *core.SampleDigest) error {
	if want == nil {
		return nil
	}
	if got == nil {
		return fmt.Errorf("sample_order: the trainer's preflight printed no digest of the samples its data path reads (no %q line); Rival's digest of Megatron's order covers the first %d (sha256 %s): without the framework's own digest, other token sequences would go unnoticed",
			strings.TrimSpace(SamplesPrefix), want.Samples, want.SHA256)
	}
	if got.Samples != want.Samples {
		return fmt.Errorf("sample_order: the trainer's preflight digested its first %d samples (sha256 %s); Rival's digest of Megatron's order covers the first %d (sha256 %s)",
			got.Samples, got.SHA256, want.Samples, want.SHA256)
	}
	if got.SHA256 != want.SHA256 {
		return fmt.Errorf("sample_order: the trainer's first %d samples (sha256 %s) are not those of Megatron's order Rival wrote (sha256 %s): it would train on other token sequences",
			got.Samples, got.SHA256, want.SHA256)
	}
	return nil
}

// HeldOutPrefix starts the line where a preflight prints its digest of the held-out sequences its
// framework's own evaluation reads.
const HeldOutPrefix = "preflight held-out: "

// ReadHeldOut reads the JSON after HeldOutPrefix.
func ReadHeldOut(j string) (*core.SampleDigest, error) {
	s, err := ReadSamples(j)
	if err != nil {
		return nil, fmt.Errorf("held_out: %w", err)
	}
	return s, nil
}

// CompareHeldOut compares a preflight's digest of the held-out sequences (got; nil: it printed none)
// with Rival's (want; nil: the run does not evaluate): an evaluation of other sequences than every
// other framework's must not run, nor one whose preflight did not digest them.
func CompareHeldOut(want, got *core.SampleDigest) error {
	switch {
	case want == nil:
		return nil
	case got == nil:
		return fmt.Errorf("held_out: the trainer's preflight printed no digest of the held-out sequences it evaluates (no %q line); Rival's digest of its %d sequences is sha256 %s",
			strings.TrimSpace(HeldOutPrefix), want.Samples, want.SHA256)
	case got.Samples != want.Samples || got.SHA256 != want.SHA256:
		return fmt.Errorf("held_out: the trainer would evaluate %d held-out sequences with sha256 %s; Rival's held-out set is %d sequences with sha256 %s: its held-out loss would not be comparable",
			got.Samples, got.SHA256, want.Samples, want.SHA256)
	}
	return nil
}
