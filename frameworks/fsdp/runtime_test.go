package fsdp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/logparse"
)

// fsdp2Block is the start of a two-process torch 2.6 run's log: the rival_fsdp_* lines as the
// trixie image test's run printed them, one unrelated Megatron argument and the first step.
const fsdp2Block = `------------------------ arguments ------------------------
  hidden_size ..................................... 128
  rival_fsdp_attention ............................ sdpa enable_gqa math
  rival_fsdp_optimizer ............................ AdamW fused
  rival_fsdp_param_dtype .......................... bf16
  rival_fsdp_path ................................. fsdp2
  rival_fsdp_reduce_dtype ......................... fp32
  rival_fsdp_torch ................................ 2.6.0
-------------------- end of arguments ---------------------
 [2026-11-23 20:18:01] iteration        1/      30 | consumed samples:            4 | elapsed time per iteration (ms): 1210.4 | throughput per GPU (TFLOP/s/GPU): 0.0 | learning rate: 7.500000E-04 | global batch size:     4 | lm loss: 7.625488E+00 | loss scale: 1.0 | grad norm: 1.042 | number of skipped iterations:   0 | number of nan iterations:   0 |
`

func TestRuntimeFromArgs(t *testing.T) {
	parsed, err := logparse.Parse(strings.NewReader(fsdp2Block), "fsdp")
	require.NoError(t, err)
	full := parsed.Preamble.Args
	without := func(key string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			if k != key {
				m[k] = v
			}
		}
		return m
	}
	with := func(key, v string) map[string]string {
		m := without(key)
		m[key] = v
		return m
	}
	cases := []struct {
		name    string
		args    map[string]string
		want    Runtime
		found   bool
		wantErr string
	}{
		{name: "fsdp2 run", args: full, found: true, want: Runtime{Path: "fsdp2", Torch: "2.6.0", ParamDType: "bf16",
			ReduceDType: "fp32", Attention: "sdpa enable_gqa math", Optimizer: "AdamW fused"}},
		{name: "another framework's log", args: map[string]string{"hidden_size": "4096"}},
		{name: "no arguments block", args: nil},
		{name: "cut report", args: without("rival_fsdp_optimizer"), found: true, wantErr: "lacks rival_fsdp_optimizer"},
		{name: "empty value", args: with("rival_fsdp_torch", "  "), found: true, wantErr: "lacks rival_fsdp_torch"},
		{name: "unknown path", args: with("rival_fsdp_path", "zero3"), found: true, wantErr: `rival_fsdp_path "zero3"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := RuntimeFromArgs(tc.args)
			assert.Equal(t, tc.found, found)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	rt, _, err := RuntimeFromArgs(full)
	require.NoError(t, err)
	assert.Equal(t, "fsdp2 on torch 2.6.0, params bf16, reduce fp32, attention sdpa enable_gqa math, AdamW fused", rt.String())
}

// FuzzRuntimeFromArgs feeds arbitrary logs through the parser and the report reader: no panic,
// and a report without error always names a known path and every field.
func FuzzRuntimeFromArgs(f *testing.F) {
	f.Add(fsdp2Block)
	f.Add(strings.Replace(fsdp2Block, "fsdp2", "ddp", 1))
	f.Add("  rival_fsdp_path ......... single\n")
	f.Fuzz(func(t *testing.T, log string) {
		parsed, err := logparse.Parse(strings.NewReader(log), "fsdp")
		if err != nil {
			return
		}
		rt, found, err := RuntimeFromArgs(parsed.Preamble.Args)
		if !found || err != nil {
			return
		}
		for _, v := range []string{rt.Path, rt.Torch, rt.ParamDType, rt.ReduceDType, rt.Attention, rt.Optimizer} {
			if v == "" || v != strings.TrimSpace(v) {
				t.Fatalf("field %q in %+v", v, rt)
			}
		}
		switch rt.Path {
		case PathFSDP2, PathFSDP1, PathDDP, PathSingle:
		default:
			t.Fatalf("path %q accepted", rt.Path)
		}
	})
}
