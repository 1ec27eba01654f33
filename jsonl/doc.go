// Package jsonl reads JSON-lines corpora ({"text": ...} per line) the way
// Megatron's tools/preprocess_data.py reads them with Python's json.loads, so
// every Rival step that reads such a file (filter, encode, hub shards) agrees
// on what a line's text is and on which lines are malformed.
//
// [ReadLines] splits a stream into numbered lines of any length; [Text] (or a
// [Decoder], which keeps its buffers across lines) validates one line and
// returns its "text". It imports nothing else from Rival; corpus, the encode
// pipeline and hub read lines through it.
package jsonl
