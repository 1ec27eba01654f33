// Package tasks holds Rival's targets: fetch, filter, encode, image, train, extract, compare and
// the cache's upkeep, each built as dag.Task values over one Workspace (the configuration, the
// cache and a dag.Runner). The work of each concern lives in a package below it (tasks/executor,
// tasks/training, tasks/images, tasks/data, tasks/results, tasks/sharedstore, tasks/upkeep), to
// which the Workspace hands explicit values; the demo, which runs them all, stays here. It exports
// only what magefile.go calls. magefile.go declares the targets and delegates each to one call
// here, through Main (or Bare for extract), which opens the Workspace and handles Ctrl-C.
//
// Where things are:
//
//   - configuration: loadConfig and config (config.go), the fingerprinted keys of config.env;
//     environment (settings.go), what changes how Rival runs but enters no key.
//   - data: FetchTarget, FilterTarget, EncodeTarget, FilterFileTarget, EncodeFileTarget,
//     ConfiguredDatasets and VerifyData (data.go) hand the configured dataset, models, DATA_DIR
//     and settings (data.Options) to package tasks/data, which builds the pipeline's fetch,
//     filter and encode tasks, resolves tokenizers, and writes and verifies dataset manifests.
//   - images: ImageTarget (targets.go) and ImagePushTarget (imagepush.go) hand the root, the
//     folders, IMAGE_BASE and the runner (images, docker.go) to package tasks/images, which builds,
//     records and pushes the platform images and names the image a cluster run pulls
//     (slurmImage, imagepush.go, with SLURM_IMAGE); shell's container is shellSpec (docker.go).
//   - training: TrainTarget (targets.go) plans runs with planTraining (trainplan.go) from the
//     configuration; trainTask (train.go) turns each into a training.Run in its training.Workload
//     and hands it to package tasks/training, which builds and runs it (launch, preflight, log,
//     power samples, progress, result) through an executor.Executor (package tasks/executor: Host,
//     Docker, Slurm, Kube), picked and filled from the configuration by executorFor,
//     newSlurmExecutor and newKubeExecutor (executors.go); a CPU run's precision is chosen in
//     cpuprobe.go; train:check (CheckTarget, trainplan.go) runs each launch's training.Preflight;
//     train:k8s-manifest is in kubemanifest.go, the KUBE_ settings a Kubernetes run needs are
//     checked together in kubesettings.go; the platforms' configuration is in platforms.go;
//     Ctrl-C and SIGTERM are handled in signals.go.
//   - results: ExtractTarget, CompareTarget, HistoryTarget and VerifyResults (results.go) hand
//     the configured folders, the cache, the shared store's results and the configuration's
//     defaults to package tasks/results, which does the work; for verify:result of one file,
//     verifyRunFor and recompute (verifyrun.go) pick the run it is checked against (plannedrun.go)
//     and recompute that run's inputs; Demo (demo.go, its runs in demoplan.go) runs the whole
//     pipeline on the bundled sample.
//   - the shared store: openWorkspace makes RIVAL_STORE the runner's dag.Remote through package
//     tasks/sharedstore, with storeOptions (workspace.go); StoreListTarget, StorePullTarget and
//     the store:ID arguments of verify:result (readResultArg) are in store.go.
//   - upkeep: CacheStats, CacheTrim, CacheVerify, Purge and WrapTarget (maint.go) hand the cache,
//     the root and the configured folders and limits to package tasks/upkeep, which does the work;
//     markOwnDirs (workspace.go) has upkeep create and mark OUTPUT_DIR and DATA_DIR.
//   - small helpers: paths (paths.go), the PyTorch probe (torchcheck.go).
package tasks
