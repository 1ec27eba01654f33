// Package hub downloads files from the Hugging Face Hub (or a mirror) over plain HTTP and reads the
// documents in the shard formats the hub serves (JSON lines, gzip'd JSON lines, parquet).
//
// # Entry points
//
//   - [Catalog] and [Lookup] name the pinned sources Rival fetches: each model's tokenizer and
//     config, each dataset's shards, every one at a fixed revision.
//   - [New] (or [OptionsFromEnv] for HF_ENDPOINT and HF_TOKEN) builds a [Client];
//     [Client.Download] fetches one [Request] to a path: resumably through a .part file, retried on
//     transient failures, checked against the sha256 the hub or the request states, and renamed into
//     place only when whole.
//     Concurrent downloads of one path, in one process or several, wait for each other and reuse
//     the file.
//   - [Documents.Read] streams the text of each document in a downloaded shard, in bounded memory;
//     [DetectFormat] tells the shard formats apart. Parquet shards are read by the rival-parquet
//     program ([ParquetProgram], package hub/parquettext), so that the targets need not compile
//     the parquet library.
//
// # Dependencies
//
// From Rival it imports only jsonl (so that a shard's lines are read as every other corpus's are),
// safefile and internal/goprog, and knows nothing of Rival's cache: the caller decides where a
// download lands and where rival-parquet is built.
// Package tasks uses it for fetch; subpackage hubtest is a loopback server that answers as the
// hub does, for tests.
package hub
