// Package indexed reads and writes Megatron-LM indexed datasets (the .bin/.idx pair, index
// version 1) byte for byte as Megatron's own builder lays them out, so that any framework built on
// Megatron's dataset loader can train from them.
//
// # Entry points
//
//   - [NewWriter] starts a dataset under temporary names; [Writer.AddDocument] appends one
//     document's tokens ([Writer.AddSequence] and [Writer.EndDocument] for several sequences per
//     document); [Writer.Finalize] publishes the pair so that no reader sees a .bin and an .idx that
//     do not belong together, and [Writer.Abort] discards it.
//   - [Open] memory-maps an existing pair and checks every invariant of the format;
//     [Dataset.Sequence] reads one sequence's tokens.
//   - [Merge] concatenates datasets as Megatron's preprocess_data.py merges its partitions.
//   - [FingerprintFiles] and [Dataset.Fingerprint] identify a dataset's exact bytes, so that two
//     hosts can show they train on the same tokens; its digests are [Digest] values, bytes that
//     become 64 lowercase hex digits only as text (JSON, logs).
//   - [DTypeForVocab] picks the token type Megatron picks for a vocabulary.
//
// # Dependencies
//
// It imports nothing else from Rival and knows nothing of tokenizers, corpora or the cache; the
// encode pipeline writes with it and package tasks opens and fingerprints what it wrote.
package indexed
