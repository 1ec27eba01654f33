// Package executor runs a framework's launch (core.Launch) and streams its output lines: on this
// host, in a container, as a Slurm job or as a Kubernetes Indexed Job. Package tasks picks one for
// a run and fills it from its configuration; nothing here reads config.env or the environment's
// settings, and nothing imports tasks.
//
// Where things are:
//
//   - the contract: Executor, Kind (its spellings are part of every training task's key), PathMap
//     and Inside (where the run's folders appear to the trainer), Info (what a run learned) and
//     StopGrace (executor.go).
//   - one host: Host (hostexec.go), a process group per run, its environment allow-listed
//     (hostenv.go), its group remembered until reaped so a forced stop can kill it (KillGroups,
//     groups.go); Docker (docker.go), one container through the Engine API; both give a launch the
//     only node's rendezvous (localEnv, rendezvous.go).
//   - clusters: Slurm (slurm.go), a batch script submitted and followed, with ContainerMode and
//     the nodes' power (SlurmPower, slurmpower.go); Kube (kube.go), an Indexed Job and its Service.
//   - preflights: the lines a cluster job's preflight step prints, followed while the job runs
//     (preflightlines.go), and the digest of its first samples (samples.go); tasks/training's
//     Preflight reads the same lines on one host through ReadEffective, DescribeRan, ReadSamples
//     and CompareSamples.
package executor
