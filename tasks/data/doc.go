// Package data builds Rival's data targets as dag.Task values: the configured pipeline that fetches
// DATASET from the hub, filters it and encodes it for every model in MODELS, the same filter and
// encode over any local file (filter:file, encode:file), and verify:data over the encoded datasets
// and their manifests. It knows nothing of the workspace's configuration: package tasks fills
// Options from config.env and the environment (the root, DATA_DIR, the dataset, models and
// minimums, the hub client, where reports and progress go) and its targets are thin calls into
// this package. The tasks' IDs, parameters, tools and outputs key the cache; they are the ones
// package tasks built before this package existed.
//
// Where things are:
//
//   - options.go: Options, what a data task reads, and LiveLine, the progress line an encode
//     writes to its log.
//   - pipeline.go: Pipeline and BuildPipeline, the fetch, filter, tokenizer and encode tasks of
//     the configured dataset and models.
//   - fetch.go: the dataset's fetch (its shards read into JSONL) and each model's tokenizer fetch.
//   - filter.go: FilterTask and ReportFilter.
//   - encode.go: TokenizerSpec and ResolveTokenizer (a model name or a tokenizer.json path),
//     EncodeTask and ReportEncode, the encode's progress.
//   - manifest.go: Manifest, the sidecar written next to every dataset (ManifestPath), read back
//     by DecodeManifest; DatasetDigest for a fingerprint's short form.
//   - verifydata.go: DatasetPrefix and encodePrefix, where datasets are written; VerifyDataset and
//     VerifyData, which check them against their manifests.
package data
