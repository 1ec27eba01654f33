package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExtractExplained runs extract -v on a Megatron-Bridge log pasted from a
// terminal: one hard-wrapped step, one echoed step, one step cut after its first
// segment (testdata/extract-wrapped.log, built in the format of Bridge's training_log).
func TestExtractExplained(t *testing.T) {
	for k, v := range map[string]string{"GBS": "512", "SL": "4096", "GPUS": "8", "PRECISION": "bf16", "GPU": "H100 SXM", "MODEL": "llama", "PLATFORM": "nvd"} {
		t.Setenv(k, v)
	}
	var out, explain bytes.Buffer
	require.NoError(t, Extract("testdata/extract-wrapped.log", "0.1.0", &out, &explain))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	e := explain.String()
	for _, want := range []string{
		"line 1\tstep 1\tread\tstep_time_s=30.5",
		"line 3\tstep -\tjoined\tline 3 continues the iteration line of line 2",
		"line 2\tstep 2\tread\tstep_time_s=0.52",
		"line 4\tstep 2\tskipped\tduplicate",
		"line 5\tstep 3\tcut\t",
		"summary\twarm-up: the first 1 logged step(s)",
		"median 0.515 s (the headline)",
		"problem\tcut_lines",
	} {
		assert.Contains(t, e, want)
	}
	var quiet bytes.Buffer
	require.NoError(t, Extract("testdata/extract-wrapped.log", "0.1.0", &quiet, nil))
	assert.Equal(t, out.String(), quiet.String(), "-v changes only what goes to the explanation")
}

// TestExtractAbsurdStepTime: a log whose step times are 1e-300 ms is refused with a
// message naming the log and the field, not a bare JSON encoding error
// (GBS×SL/step time overflows to +Inf).
func TestExtractAbsurdStepTime(t *testing.T) {
	t.Setenv("GPUS", "8")
	t.Setenv("SL", "8192")
	p := filepath.Join(t.TempDir(), "train.log")
	line := " iteration %d/ 3 | elapsed time per iteration (ms): 1e-300 | global batch size: 512 | lm loss: 1.0E+00 |\n"
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(line+line+line, 1, 2, 3)), 0o644))
	var out bytes.Buffer
	err := Extract(p, "0.1.0", &out, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), "median step time")
	assert.NotContains(t, err.Error(), "json:")
	assert.Zero(t, out.Len(), "no half-written result")
}

// TestExtractExplainedSources: extract -v on the real Megatron-Bridge PR #841 paste
// says where each fact came from, which steps the warm-up rule left out and why, and
// what the other lines were; on Megatron-DeepSpeed it does not call the segment it
// reads the sequence length from "not mapped".
func TestExtractExplainedSources(t *testing.T) {
	t.Setenv("GPUS", "8")
	t.Setenv("SL", "4096")
	var out, explain bytes.Buffer
	require.NoError(t, Extract("../../frameworks/logparse/testdata/corpus/megatron-bridge-pr841-wrapped.log", "0.1.0", &out, &explain))
	e := explain.String()
	for _, want := range []string{
		"fact\tglobal batch size 512: from the log (the step line of step 10)",
		"fact\tsequence length 4096: from the environment (SL=4096)",
		"fact\tGPU count 8: from the environment (GPUS=8)",
		"fact\ttrain iterations 50: from the log (the step line of step 10)",
		"warm-up\tstep 10 left out: the first logged step",
		"lines\t19 lines read",
		"1 memory report",
		"line 6\tstep -\tjoined\tline 6 continues the memory report of line 5",
	} {
		assert.Contains(t, e, want)
	}
	assert.NotContains(t, e, "step number counted")

	t.Setenv("SL", "")
	explain.Reset()
	require.NoError(t, Extract("../../frameworks/logparse/testdata/corpus/megatron-deepspeed.log", "0.1.0", &out, &explain))
	e = explain.String()
	assert.Contains(t, e, "fact\tsequence length 4096: from the log (line 5 (\"actual seqlen\" of the first step))")
	assert.NotContains(t, e, "actual seqlen,")
}
