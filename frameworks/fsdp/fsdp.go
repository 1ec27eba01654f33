// Package fsdp is Rival's plain-PyTorch framework: an embedded training script (train.py, a
// Llama-architecture decoder trained on a Megatron indexed dataset, printing Megatron-format
// iteration lines) and the launch command that runs it, as one process or under torchrun.
package fsdp

import (
	_ "embed"
	"encoding/hex"

	"github.com/zeebo/blake3"
)

//go:embed train.py
var script []byte

// ScriptName is the file name the script expects to be written under.
const ScriptName = "train.py"

// Script returns a copy of the embedded training script, for the caller to write to Config.ScriptPath.
func Script() []byte {
	return append([]byte(nil), script...)
}

// ScriptDigest is the BLAKE3 hex digest of Script(): part of every fsdp run's cache key, so editing
// the script reruns the benchmarks that used it.
func ScriptDigest() string {
	sum := blake3.Sum256(script)
	return hex.EncodeToString(sum[:])
}
