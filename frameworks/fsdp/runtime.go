package fsdp

import (
	"fmt"
	"strings"
)

// Data-parallel paths the trainer takes, by the torch it finds (docs/fsdp.md).
const (
	PathFSDP2  = "fsdp2"  // torch >= 2.6: fully_shard with a MixedPrecisionPolicy, DTensor shards
	PathFSDP1  = "fsdp1"  // torch 2.0-2.5: FullyShardedDataParallel with MixedPrecision
	PathDDP    = "ddp"    // a torch whose FSDP cannot be imported (Debian 12's 1.13 on Python 3.11)
	PathSingle = "single" // one process
)

// Runtime is what the trainer reports it ran, printed as rival_fsdp_* entries of its
// Megatron-style arguments block (which logparse keeps in Preamble.Args).
type Runtime struct {
	Path        string // PathFSDP2, PathFSDP1, PathDDP or PathSingle
	Torch       string // torch version without the local suffix, e.g. "2.6.0"
	ParamDType  string // dtype the blocks compute with: "bf16", "fp32", or "fp32, bf16 autocast"
	ReduceDType string // gradient reduction dtype: "fp32", or "none (one process)"
	Attention   string // e.g. "sdpa enable_gqa flash", "manual (K/V repeated per group)"
	Optimizer   string // e.g. "AdamW fused", "AdamW foreach"
}

// runtimeKeys maps each Runtime field to its arguments-block key.
var runtimeKeys = []struct {
	key string
	get func(*Runtime) *string
}{
	{"rival_fsdp_path", func(r *Runtime) *string { return &r.Path }},
	{"rival_fsdp_torch", func(r *Runtime) *string { return &r.Torch }},
	{"rival_fsdp_param_dtype", func(r *Runtime) *string { return &r.ParamDType }},
	{"rival_fsdp_reduce_dtype", func(r *Runtime) *string { return &r.ReduceDType }},
	{"rival_fsdp_attention", func(r *Runtime) *string { return &r.Attention }},
	{"rival_fsdp_optimizer", func(r *Runtime) *string { return &r.Optimizer }},
}

// RuntimeFromArgs reads the trainer's report from a parsed arguments block. It returns
// false when the log has none (a trainer from before the report, or another framework),
// and an error naming the key when the report is partial or names an unknown path.
func RuntimeFromArgs(args map[string]string) (Runtime, bool, error) {
	var r Runtime
	found := 0
	var missing []string
	for _, k := range runtimeKeys {
		v, ok := args[k.key]
		if !ok || strings.TrimSpace(v) == "" {
			missing = append(missing, k.key)
			continue
		}
		*k.get(&r) = strings.TrimSpace(v)
		found++
	}
	if found == 0 {
		return r, false, nil
	}
	if len(missing) > 0 {
		return r, true, fmt.Errorf("fsdp: the trainer's arguments block lacks %s: the log is cut or was edited", strings.Join(missing, ", "))
	}
	switch r.Path {
	case PathFSDP2, PathFSDP1, PathDDP, PathSingle:
	default:
		return r, true, fmt.Errorf("fsdp: rival_fsdp_path %q: want %s, %s, %s or %s", r.Path, PathFSDP2, PathFSDP1, PathDDP, PathSingle)
	}
	return r, true, nil
}

// String is the one-line form the result records after the trainer's version:
// "fsdp2 on torch 2.6.0, params bf16, reduce fp32, attention sdpa enable_gqa math, AdamW fused".
func (r Runtime) String() string {
	return fmt.Sprintf("%s on torch %s, params %s, reduce %s, attention %s, %s",
		r.Path, r.Torch, r.ParamDType, r.ReduceDType, r.Attention, r.Optimizer)
}
