//go:build race

package tokenizer

// raceEnabled: the race detector slows encoding ~10x, so size-bound tests shrink.
const raceEnabled = true
