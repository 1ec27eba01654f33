// Package training runs one training run of a workspace, from its launch to its result: Task
// builds the run as a dag.Task over a Run (what trains, on which data, through which executor, in
// which Workload) and a Site (where the workspace's runs write); the workspace plans the runs and
// fills both from its configuration.
//
// Where things are:
//
//   - what a run is (workload.go): Run, Workload, CPUPrecision, Site and Notes; Name, a run's
//     file-name stem; the TP×PP×DP check against the run's GPUs.
//   - the run (run.go, its state in trainrun.go): Task; the run's key (Prepare adds the launch's
//     digest, with the workspace's location as a placeholder, key.go) and its steps (stage, the
//     preflight, the launch, the result).
//   - the launch (launch.go): Launch builds the framework's launch for a dataset fingerprint with
//     the folders placed where the executor shows them.
//   - the preflight (preflight.go): Preflight runs the framework's own checks before the launch
//     and compares its read-back and its sample digest with the workload's.
//   - the sample order (samples.go): Megatron's GPTDataset order for the run, written where the
//     trainers read it, and its digest of the first global batches.
//   - the log (log.go): streamed to a partial file, kept aside when the run fails.
//   - the result (result.go): the log parsed in its family with the run's facts, its provenance,
//     ReadManifest; the CPU a run trained on (cpuinfo.go).
//   - while it trains: GPU power samples over the measured steps (power.go) and a progress line
//     with rate, loss and ETA (stepprogress.go).
package training
