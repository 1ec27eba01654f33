package prim

// Where the Primus image keeps Primus, which the launch and the experiment patcher both name.

// Dir is where the Primus image keeps Primus; run_pretrain.sh runs from there.
const Dir = "/workspace/Primus"

// Script is Primus's launcher, relative to Dir.
const Script = "examples/run_pretrain.sh"
