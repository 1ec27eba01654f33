package core

import "strconv"

// Rendezvous is what a launch needs to know about the nodes of its run. A launch states it; the
// executor provides it: on one host the values of LocalNode, under Slurm the batch script on each
// node. Launch.Env never carries these variables, so no executor has to undo a launch's guess.
type Rendezvous struct {
	NNodes      int // nodes in the run
	GPUsPerNode int // processes per node
	// Env: the launch reads RendezvousVars from its environment (Primus's examples/run_pretrain.sh).
	// Without it the launch is torchrun's, whose --nnodes flag carries the layout and whose PET_*
	// variables carry the rest on several nodes.
	Env bool
}

// The per-node rendezvous variables, in the order executors export them.
const (
	EnvNNodes      = "NNODES"
	EnvGPUsPerNode = "GPUS_PER_NODE"
	EnvNodeRank    = "NODE_RANK"
	EnvMasterAddr  = "MASTER_ADDR"
	EnvMasterPort  = "MASTER_PORT"
)

// RendezvousVars lists the variables NodeEnv sets.
var RendezvousVars = []string{EnvNNodes, EnvGPUsPerNode, EnvNodeRank, EnvMasterAddr, EnvMasterPort}

// DefaultMasterPort is the rendezvous port when none is given (torchrun's own default).
const DefaultMasterPort = 29500

// Node is one node's place in a run, each value as the executor writes it: literal values on one
// host, shell expansions ("$SLURM_NODEID") in a batch script that fills them in on each node.
type Node struct {
	NNodes, GPUsPerNode, Rank, MasterAddr, MasterPort string
}

// LocalNode is the only node of a one-host run.
func (r Rendezvous) LocalNode() Node {
	return Node{NNodes: "1", GPUsPerNode: strconv.Itoa(r.GPUsPerNode), Rank: "0", MasterAddr: "localhost",
		MasterPort: strconv.Itoa(DefaultMasterPort)}
}

// Var is one environment variable.
type Var struct{ Name, Value string }

// NodeEnv returns the rendezvous variables of node n, in RendezvousVars order. Every executor takes
// the names and their meaning from here.
func NodeEnv(n Node) []Var {
	return []Var{{EnvNNodes, n.NNodes}, {EnvGPUsPerNode, n.GPUsPerNode}, {EnvNodeRank, n.Rank},
		{EnvMasterAddr, n.MasterAddr}, {EnvMasterPort, n.MasterPort}}
}

// IsRendezvousVar reports whether name is one of RendezvousVars or torchrun's PET_ form of one.
func IsRendezvousVar(name string) bool {
	for _, v := range RendezvousVars {
		if name == v || name == "PET_"+v {
			return true
		}
	}
	return false
}
