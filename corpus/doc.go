// Package corpus reads and writes JSON-lines corpora ({"text": ...} per
// line) and filters them, streaming, in constant memory.
package corpus
