package executor

import (
	"fmt"
	"sort"

	"github.com/rivalbench/rival/frameworks/core"
)

// localEnv is a launch's environment on one host, as KEY=VALUE sorted by key: Launch.Env plus, for a
// launch that reads its rendezvous from the environment, the only node's values (core.NodeEnv of
// LocalNode). A launch laid out for several nodes is refused: only Slurm runs those.
func localEnv(l core.Launch) ([]string, error) {
	if l.Rendezvous.NNodes > 1 {
		return nil, fmt.Errorf("%s: the launch is laid out for %d nodes, and one host runs one node: set SLURM=1 (NNODES > 1 runs through Slurm)",
			l.Framework, l.Rendezvous.NNodes)
	}
	env := make(map[string]string, len(l.Env)+len(core.RendezvousVars))
	for k, v := range l.Env {
		if core.IsRendezvousVar(k) {
			return nil, fmt.Errorf("%s: Launch.Env sets %s, which the executor provides: state it in Launch.Rendezvous", l.Framework, k)
		}
		env[k] = v
	}
	if l.Rendezvous.Env {
		for _, v := range core.NodeEnv(l.Rendezvous.LocalNode()) {
			env[v.Name] = v.Value
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}
