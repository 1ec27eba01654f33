package logparse

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// progressOracle is one step line as testdata/progress/oracle.py reads it.
type progressOracle struct {
	Line            int      `json:"line"`
	Step            int      `json:"step"`
	Total           int      `json:"total,omitempty"`
	StepTimeMs      float64  `json:"step_time_ms,omitempty"`
	GlobalBatchSize int      `json:"global_batch_size,omitempty"`
	Loss            *float64 `json:"loss,omitempty"`
	TokensPerSecond float64  `json:"tokens_per_second,omitempty"`
}

// TestProgressLineOracle reads every real and built log line by line, as a
// trainer's output streams, and compares with oracle.py's independent reading.
func TestProgressLineOracle(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "progress", "expected.json"))
	require.NoError(t, err)
	var want map[string][]progressOracle
	require.NoError(t, json.Unmarshal(data, &want))
	require.NotEmpty(t, want)
	for name, steps := range want {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
			require.NoError(t, err)
			got := []progressOracle{}
			for i, line := range strings.Split(string(b), "\n") {
				pr, ok := ProgressLine(line)
				if !ok {
					continue
				}
				o := progressOracle{Line: i + 1, Step: pr.Step, Total: pr.Total, StepTimeMs: pr.StepTimeMs,
					GlobalBatchSize: pr.GlobalBatchSize, TokensPerSecond: pr.TokensPerSecond}
				if pr.HasLoss {
					o.Loss = &pr.Loss
				}
				got = append(got, o)
			}
			if steps == nil {
				steps = []progressOracle{}
			}
			assert.Equal(t, steps, got)
		})
	}
}

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want Progress
		ok   bool
	}{
		{
			name: "fsdp trainer line",
			line: "[2026-11-23 19:30:10] iteration       10/      30 | consumed samples:           40 | elapsed time per iteration (ms): 250.5 | learning rate: 1.000000E-03 | global batch size:     4 | lm loss: 8.500000E+00 | loss scale: 1.0 | grad norm: 1.000 |",
			want: Progress{Family: Megatron, Step: 10, Total: 30, StepTimeMs: 250.5, GlobalBatchSize: 4, Loss: 8.5, HasLoss: true},
			ok:   true,
		},
		{
			name: "torchrun rank label",
			line: "[rank7]: [2026-11-23 19:30:10] iteration 3/ 5 | elapsed time per iteration (ms): 100.0 | lm loss: 7.0 |",
			want: Progress{Family: Megatron, Step: 3, Total: 5, StepTimeMs: 100, Loss: 7, HasLoss: true},
			ok:   true,
		},
		{
			name: "nan loss is no loss",
			line: " iteration 3/ 5 | elapsed time per iteration (ms): 100.0 | lm loss: nan |",
			want: Progress{Family: Megatron, Step: 3, Total: 5, StepTimeMs: 100},
			ok:   true,
		},
		{
			name: "iteration line without a step time",
			line: " iteration 3/ 5 | consumed samples: 12 |",
		},
		{
			name: "Megatron memory report",
			line: "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.0 |",
		},
		{
			name: "TorchTitan in colour",
			line: "\x1b[31mstep:  2  \x1b[32mloss: 11.6000  \x1b[33mmemory: 48.87GiB(51.44%)  \x1b[34mtps: 4,376  \x1b[36mtflops: 253.41  \x1b[35mmfu: 25.62%\x1b[39m",
			want: Progress{Family: TorchTitan, Step: 2, Loss: 11.6, HasLoss: true, TokensPerSecond: 4376},
			ok:   true,
		},
		{
			name: "TorchTitan line cut after its loss",
			line: "step: 4  loss: 10.9",
			want: Progress{Family: TorchTitan, Step: 4, Loss: 10.9, HasLoss: true},
			ok:   true,
		},
		{
			name: "TorchTitan validation",
			line: "validate step: 10  loss: 3.2000  memory: 48.87GiB(51.44%)",
		},
		{
			name: "NeMo ProgressPrinter",
			line: "Training epoch 0, iteration 45/99 | lr: 3e-05 | global_step: 45 | reduced_train_loss: 2.5 | train_step_timing in s: 0.5",
			want: Progress{Family: NeMo, Step: 45, Loss: 2.5, HasLoss: true},
			ok:   true,
		},
		{
			name: "plain output",
			line: "building the dataset index",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ProgressLine(tc.line)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// FuzzProgressLine checks ProgressLine never panics and never reports a negative
// step or figure, on real lines and mutations of them.
func FuzzProgressLine(f *testing.F) {
	for _, dir := range []string{"real", "corpus", "built"} {
		paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.log"))
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n") {
				f.Add(line)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		pr, ok := ProgressLine(line)
		if !ok {
			if pr != (Progress{}) {
				t.Fatalf("not a step line, yet %+v", pr)
			}
			return
		}
		if pr.Step < 0 || pr.Total < 0 || pr.StepTimeMs < 0 || pr.GlobalBatchSize < 0 || pr.TokensPerSecond < 0 {
			t.Fatalf("negative figure in %+v", pr)
		}
	})
}
