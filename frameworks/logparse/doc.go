// Package logparse reads the training logs that Megatron-LM, AMD Primus, NeMo 2.0,
// Megatron-Bridge and TorchTitan print, whatever their version, into one per-step
// series plus the preamble facts the log states (parameter count, world size,
// sequence length, batch sizes).
//
// Units are fixed so callers never convert: step times in seconds, memory in MiB
// (2^20 bytes) whatever the framework printed (Megatron "MB" is MiB, Megatron-Bridge
// "GB" is 10^9 bytes, Primus "GB" is GiB, TorchTitan prints GiB), rates per GPU.
//
// The parser streams: a log of any size is read line by line with a bounded line
// buffer, and only one rank's step series is kept (see Log.Rank).
//
// ProgressLine reads a single line, without state, while a run's output streams:
// the step, the loss and the rates a progress display shows. Its step time stays in
// the milliseconds Megatron prints, so a display rounds the printed value itself
// (going through seconds and back moves 501.5 ms to 502).
package logparse
