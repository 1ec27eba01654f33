// Package tasks holds Rival's targets: fetch, filter, encode, image, train, extract, compare and
// the cache's upkeep, each built as dag.Task values over one Workspace (the configuration, the
// cache and a dag.Runner). magefile.go declares the targets and delegates each to one call here,
// through Main (or Bare for extract), which opens the Workspace and handles Ctrl-C.
//
// Where things are:
//
//   - configuration: LoadConfig and Config (config.go), the fingerprinted keys of config.env;
//     Settings (settings.go), what changes how Rival runs but enters no key.
//   - data: FetchTarget (fetch.go), FilterTask (filter.go), EncodeTask and ResolveTokenizer
//     (encode.go), VerifyData and dataset manifests (verifydata.go, manifest.go).
//   - images: ImageTask and EnsureImage (docker.go), ImagePushTarget and SlurmImage (imagepush.go).
//   - training: TrainTarget (targets.go) plans runs with PlanTraining (trainplan.go) and builds
//     each with TrainTask (train.go), which runs it through an Executor (executor.go):
//     HostExecutor (hostexec.go), DockerExecutor (docker.go) or SlurmExecutor (slurm.go);
//     progress lines (progress.go, stepprogress.go) and power samples (power.go, slurmpower.go)
//     come along.
//   - results: Extract (extract.go), CompareTask (compare.go), VerifyResults (verifyresult.go),
//     Demo (demo.go) for the whole pipeline on the bundled sample.
//   - the shared store (store.go): RIVAL_STORE as the runner's dag.Remote, result entries,
//     StoreListTarget and StorePullTarget, store:ID arguments of verify:result.
//   - upkeep: CacheTrim, CacheVerify, Purge and WrapTarget (maint.go).
package tasks
