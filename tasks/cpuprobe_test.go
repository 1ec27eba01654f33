package tasks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/result"
)

func TestCPUBF16FromFlags(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       bool
		flag       string
	}{
		{"avx512_bf16", "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n", true, "avx512_bf16"},
		{"amx_bf16", "flags : sse avx2 amx_bf16 amx_tile\n", true, "amx_bf16"},
		{"avx2 only", "flags\t\t: fpu sse avx2 fma\n", false, ""},
		{"a bf16 flag in another line", "bugs\t\t: avx512_bf16\nflags\t: avx2\n", false, ""},
		{"no flags line", "processor\t: 0\n", false, ""},
		{"empty", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, flag := cpubf16([]byte(tc.info))
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.flag, flag)
		})
	}
}

func FuzzCPUBF16(f *testing.F) {
	for _, p := range []string{"avx512-bf16.txt", "no-bf16.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "cpuinfo", p))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		native, flag := cpubf16(b)
		if native != (flag != "") {
			t.Fatalf("native %v with flag %q", native, flag)
		}
	})
}

func TestChooseCPUPrecision(t *testing.T) {
	bf, err := os.ReadFile(filepath.Join("testdata", "cpuinfo", "avx512-bf16.txt"))
	require.NoError(t, err)
	no, err := os.ReadFile(filepath.Join("testdata", "cpuinfo", "no-bf16.txt"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, asked, source string
		info                []byte
		want                string
		changed             bool
	}{
		{"config.env bf16 on a CPU without bf16", "bf16", "config.env:28", no, "fp32", true},
		{"config.env bf16 on a bf16 CPU", "bf16", "config.env:28", bf, "bf16", false},
		{"default fp32 stays", "fp32", "default", bf, "fp32", false},
		{"environment bf16 is honoured", "bf16", "environment", no, "bf16", false},
		{"unreadable cpuinfo: fp32", "bf16", "default", nil, "fp32", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := chooseCPUPrecision(tc.asked, tc.source, tc.info)
			assert.Equal(t, tc.want, p.Precision)
			assert.Equal(t, tc.changed, p.Changed)
			assert.NotEmpty(t, p.Reason)
		})
	}
}

// TestCPURunRecordsAndFingerprintsThePrecisionItRan: config.env asks for
// bf16 (written for GPUs); on a CPU without native bf16 the run trains
// fp32, and the launch, the training key, the result's precision and its
// config fingerprint all say fp32.
func TestCPURunRecordsAndFingerprintsThePrecisionItRan(t *testing.T) {
	for _, tc := range []struct{ cpuinfo, want string }{
		{"no-bf16.txt", "fp32"},
		{"avx512-bf16.txt", "bf16"},
	} {
		t.Run(tc.cpuinfo, func(t *testing.T) {
			old := cpuFlagsPath
			cpuFlagsPath = filepath.Join("testdata", "cpuinfo", tc.cpuinfo)
			t.Cleanup(func() { cpuFlagsPath = old })
			w, log := newWorkspace(t, "PRECISION=bf16\n")
			ex := &scriptedExecutor{steps: 4}
			in := newTrainInputs(t, w, ex)
			task, err := w.trainTask(in)
			require.NoError(t, err)
			require.NoError(t, w.runner.Run(context.Background(), task))

			i := slices.Index(ex.last.Command, "--precision")
			require.GreaterOrEqual(t, i, 0, "launch %v", ex.last.Command)
			assert.Equal(t, tc.want, ex.last.Command[i+1], "what the trainer is told")
			assert.Equal(t, tc.want, task.Params["cfg.PRECISION"], "what the key holds")
			data, err := os.ReadFile(task.Outputs[0].Path)
			require.NoError(t, err)
			var r result.Result
			require.NoError(t, json.Unmarshal(data, &r))
			assert.Equal(t, tc.want, r.TrainingConfig.Precision, "what the result records")
			ran, err := in.Config.with("oracle", map[string]string{"PRECISION": tc.want})
			require.NoError(t, err)
			require.NotNil(t, r.ConfigFingerprint)
			assert.Equal(t, ran.fingerprint().String(), *r.ConfigFingerprint, "the fingerprint is of the configuration that ran")
			assert.Equal(t, tc.want, r.Provenance.Config["PRECISION"])
			assert.Contains(t, log.String(), "CPU runs train in "+tc.want+": ")
		})
	}
}

func TestReferenceBLASIsNamed(t *testing.T) {
	ref := torchProbe{Version: "1.13.1", BLAS: []string{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"}}
	assert.Equal(t, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", ref.referenceBLAS())
	assert.Contains(t, blasAdvice(ref), "apt-get install libopenblas0-pthread")
	open := torchProbe{Version: "1.13.1", BLAS: []string{"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"}}
	assert.Empty(t, open.referenceBLAS())
	assert.Empty(t, blasAdvice(open))
}

// TestProbeTorchReadsTheRealBLAS asks the host's python3 which BLAS its
// torch maps (Debian's python3-torch links libblas.so.3, an alternative
// that libopenblas0-pthread points at OpenBLAS).
func TestProbeTorchReadsTheRealBLAS(t *testing.T) {
	p, err := probeTorch(context.Background(), "/usr/bin/python3")
	if err != nil {
		t.Skipf("no PyTorch: %v", err)
	}
	assert.NotEmpty(t, p.Version)
	assert.NotEmpty(t, p.BLAS, "torch maps a BLAS library")
	t.Logf("torch %s, BLAS %v", p.Version, p.BLAS)
}
