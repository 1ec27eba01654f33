// Package encode turns JSONL corpora into Megatron indexed datasets: a streaming, parallel,
// order-preserving encode whose output is identical whatever the number of workers, in memory
// bounded by the chunk size and worker count rather than by the corpus. With Options.Stream, a
// line too long to hold (one huge document) is decoded, encoded and written as it is read, so
// memory is not bounded by the longest document either, only by its longest pre-token.
//
// File writes one dataset (encode:file), Split a train/test pair cut by documents in input order
// (encode); CountDocuments and TrainDocuments size that cut. The tokenizer comes in as an
// AppendEncoder, so this package imports only indexed and jsonl, and is tested without a tokenizer.
package encode
