package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Slurm job's log carries its preflight step's lines: the first failure is quoted, and what the
// step read in the image becomes what the result says ran.
func TestSlurmPreflightLines(t *testing.T) {
	var p preflightLines
	for _, l := range []string{
		"srun: job 12 queued",
		`preflight ran: {"megatron_core": "0.16.0", "torch": "2.10.0a0", "megatron_tree": "/opt/x"}`,
		"preflight failed: AssertionError (at arguments.py:836: assert args.min_lr <= args.lr)",
		"preflight failed: a later line",
		`preflight ran: {"torch": "other"}`,
	} {
		p.see(l)
	}
	assert.Equal(t, "AssertionError (at arguments.py:836: assert args.min_lr <= args.lr)", p.failed)
	assert.Equal(t, "megatron_core 0.16.0, torch 2.10.0a0", p.ran)
}

// The preflight lines of a cluster job: the read-back is kept when it equals the workload; when it
// differs or cannot be read the job is stopped at once.
func TestClusterPreflightLines(t *testing.T) {
	line := func(c effective.Config) string {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		return effective.LinePrefix + string(b)
	}
	workload := effective.Config{Hidden: 8}
	full, err := json.Marshal(workload)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, line, err string
	}{
		{"equal", line(workload), ""},
		{"differs", line(effective.Config{Hidden: 16}), "fsdp does not build Rival's workload (1 field(s)): hidden: the framework built 16, Rival's workload is 8"},
		{"unreadable", effective.LinePrefix + `{"hidden":`, "effective: configuration JSON"},
		{"unknown field", strings.Replace(line(workload), `"hidden"`, `"hiden"`, 1), "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stopped := false
			p := newPreflightLines(core.Launch{Framework: "fsdp", Workload: full}, func() { stopped = true })
			p.see(`preflight ran: {"torch": "2.6.0"}`)
			p.see(tc.line)
			assert.Equal(t, "torch 2.6.0", p.ran)
			if tc.err == "" {
				assert.NoError(t, p.mismatch)
				require.NotNil(t, p.effective)
				assert.Equal(t, workload, *p.effective)
				assert.False(t, stopped)
				return
			}
			require.Error(t, p.mismatch)
			assert.Contains(t, p.mismatch.Error(), tc.err)
			assert.True(t, stopped, "the job is stopped")
		})
	}
}

// A cluster job's preflight digest of its first samples is compared with Rival's as on one host: an
// equal one is kept for the result; another digest, another count or an unreadable line stops the
// job at once, naming both digests.
func TestClusterPreflightSampleLines(t *testing.T) {
	zeros, ones := strings.Repeat("0", 64), strings.Repeat("1", 64)
	want := &core.SampleDigest{Samples: 32, SHA256: zeros}
	for _, tc := range []struct {
		name, line, err string
	}{
		{"equal", `{"samples": 32, "sha256": "` + zeros + `"}`, ""},
		{"differs", `{"samples": 32, "sha256": "` + ones + `"}`,
			"sample_order: the trainer's first 32 samples (sha256 " + ones + ") are not those of Megatron's order Rival wrote (sha256 " + zeros + ")"},
		{"other count", `{"samples": 8, "sha256": "` + zeros + `"}`,
			"sample_order: the trainer's preflight digested its first 8 samples (sha256 " + zeros + "); Rival's digest of Megatron's order covers the first 32 (sha256 " + zeros + ")"},
		{"unreadable", `{"samples": 32, "sha256": `, "sample_order: the preflight's samples line"},
		{"unknown field", `{"samples": 32, "sha256": "` + zeros + `", "blake3": ""}`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stopped := false
			p := newPreflightLines(core.Launch{Framework: "mega", Samples: want}, func() { stopped = true })
			p.see("preflight samples: " + tc.line)
			p.see("preflight samples: " + `{"samples": 32, "sha256": "` + zeros + `"}`) // only the first counts
			if tc.err == "" {
				assert.NoError(t, p.mismatch)
				assert.Equal(t, want, p.samples)
				assert.False(t, stopped)
				return
			}
			require.Error(t, p.mismatch)
			assert.Contains(t, p.mismatch.Error(), tc.err)
			assert.Nil(t, p.samples)
			assert.True(t, stopped, "the job is stopped")
		})
	}
}

// A cluster job's preflight that says ok without a digest, while Rival holds one, stops the job: its
// framework's data path went unchecked. Without Rival's digest (no order written) ok is ok.
func TestClusterPreflightWithoutDigest(t *testing.T) {
	zeros := strings.Repeat("0", 64)
	stopped := false
	p := newPreflightLines(core.Launch{Framework: "titan", Samples: &core.SampleDigest{Samples: 32, SHA256: zeros}}, func() { stopped = true })
	p.see("preflight ran: {}")
	p.see("preflight ok: torchtitan")
	require.Error(t, p.mismatch)
	assert.Contains(t, p.mismatch.Error(), `sample_order: the trainer's preflight printed no digest of the samples its data path reads (no "preflight samples:" line); Rival's digest of Megatron's order covers the first 32 (sha256 `+zeros+")")
	assert.True(t, stopped, "the job is stopped")

	stopped = false
	p = newPreflightLines(core.Launch{Framework: "titan"}, func() { stopped = true })
	p.see("preflight ok: torchtitan")
	assert.NoError(t, p.mismatch)
	assert.False(t, stopped)
}

// Whatever a job's log holds, following its preflight lines never panics, and a read-back is kept
// only when it equals the workload.
func FuzzPreflightLines(f *testing.F) {
	full, err := json.Marshal(effective.Config{Hidden: 8})
	require.NoError(f, err)
	f.Add(effective.LinePrefix + string(full))
	f.Add(effective.LinePrefix + `{"hidden":`)
	f.Add(`preflight ran: {"torch": "2.6.0"}`)
	f.Add("preflight failed: x")
	f.Fuzz(func(t *testing.T, line string) {
		p := newPreflightLines(core.Launch{Framework: "fsdp", Workload: full}, func() {})
		p.see(line)
		if p.effective != nil && p.mismatch == nil {
			assert.Equal(t, effective.Config{Hidden: 8}, *p.effective)
		}
	})
}

// A job whose launch evaluates Rival's held-out set (fsdp, mega) must digest it in its preflight
// step, and the same sequences: other ones, or none before ok, stop the job. A launch that does not
// evaluate the set (prim's) is not asked for its digest.
func TestClusterPreflightHeldOut(t *testing.T) {
	zeros, ones := strings.Repeat("0", 64), strings.Repeat("1", 64)
	samples := `preflight samples: {"samples": 32, "sha256": "` + zeros + `"}`
	held := &core.SampleDigest{Samples: 8, SHA256: ones}
	for _, tc := range []struct {
		name, framework, evaluation string
		lines                       []string
		err                         string
	}{
		{"equal", core.FSDP, fsdp.Evaluation, []string{samples, `preflight held-out: {"samples": 8, "sha256": "` + ones + `"}`, "preflight ok: fsdp"}, ""},
		{"other sequences", core.FSDP, fsdp.Evaluation, []string{samples, `preflight held-out: {"samples": 8, "sha256": "` + zeros + `"}`},
			"held_out: the trainer would evaluate 8 held-out sequences with sha256 " + zeros},
		{"none before ok", core.FSDP, fsdp.Evaluation, []string{samples, "preflight ok: fsdp"}, `held_out: the trainer's preflight printed no digest of the held-out sequences it evaluates (no "preflight held-out:" line)`},
		{"mega none before ok", core.Mega, mega.Evaluation, []string{samples, "preflight ok: megatron"}, `held_out: the trainer's preflight printed no digest`},
		{"not asked of prim", core.Prim, "", []string{samples, "preflight ok: primus"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stopped := false
			p := newPreflightLines(core.Launch{Framework: tc.framework, Evaluation: tc.evaluation, Samples: &core.SampleDigest{Samples: 32, SHA256: zeros}, HeldOut: held}, func() { stopped = true })
			for _, l := range tc.lines {
				p.see(l)
			}
			if tc.err == "" {
				assert.NoError(t, p.mismatch)
				assert.False(t, stopped)
				return
			}
			require.Error(t, p.mismatch)
			assert.Contains(t, p.mismatch.Error(), tc.err)
			assert.True(t, stopped)
		})
	}
}
