// Package corpus reads and writes JSON-lines corpora ({"text": ...} per
// line) and filters them, streaming, in constant memory.
//
// [Filter] copies the documents of one corpus to another, dropping those under [FilterOptions]'
// thresholds and counting what it dropped in [FilterStats]; [Writer] writes documents as lines;
// [DecodeText] reads one line's text. Lines are read through package jsonl, so every step agrees
// on what a line says; package tasks filters and writes corpora with it.
package corpus
