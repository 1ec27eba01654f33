package logparse

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refMLLOG reads an event with encoding/json, keys matched exactly and the last repeat winning,
// as the reference scanMLLOG is held to.
func refMLLOG(s string) (mllogFields, bool) {
	f := mllogFields{value: "null"}
	var top map[string]json.RawMessage
	if !json.Valid([]byte(s)) || json.Unmarshal([]byte(s), &top) != nil || top == nil {
		return f, false
	}
	num := func(raw json.RawMessage, x *float64, has *bool) bool {
		var p *float64
		if json.Unmarshal(raw, &p) != nil {
			return false
		}
		if p != nil {
			*x, *has = *p, true
		}
		return true
	}
	str := func(raw json.RawMessage, x *string) bool {
		var p *string
		if json.Unmarshal(raw, &p) != nil {
			return false
		}
		if p != nil {
			*x = *p
		}
		return true
	}
	if raw, ok := top["time_ms"]; ok && !num(raw, &f.timeMS, &f.hasTime) {
		return f, false
	}
	if raw, ok := top["event_type"]; ok && !str(raw, &f.eventType) {
		return f, false
	}
	if raw, ok := top["key"]; ok && !str(raw, &f.key) {
		return f, false
	}
	if raw, ok := top["value"]; ok {
		f.value = string(raw)
	}
	if raw, ok := top["metadata"]; ok {
		var md map[string]json.RawMessage
		if json.Unmarshal(raw, &md) != nil {
			return f, false
		}
		if raw, ok := md["status"]; ok && !str(raw, &f.status) {
			return f, false
		}
		for k, dst := range map[string]struct {
			x   *float64
			has *bool
		}{"samples_count": {&f.samples, &f.hasSamples}, "step": {&f.step, &f.hasStep}, "epoch_num": {&f.epoch, &f.hasEpoch}} {
			if raw, ok := md[k]; ok && !num(raw, dst.x, dst.has) {
				return f, false
			}
		}
	}
	return f, true
}

// checkAgainstReference holds scanMLLOG to encoding/json on one event.
func checkAgainstReference(t *testing.T, s string) {
	got, err := scanMLLOG(s)
	want, ok := refMLLOG(s)
	if !ok {
		if err == nil && json.Valid([]byte(s)) {
			// encoding/json refused a field's type or range; so must we.
			t.Fatalf("accepted %q, which encoding/json refuses", s)
		}
		if err == nil {
			t.Fatalf("accepted invalid JSON %q", s)
		}
		return
	}
	if err != nil {
		t.Fatalf("refused %q, which encoding/json reads: %v", s, err)
	}
	var cw, cg bytes.Buffer
	if json.Compact(&cw, []byte(want.value)) != nil || json.Compact(&cg, []byte(got.value)) != nil || cw.String() != cg.String() {
		t.Fatalf("value of %q: got %s, want %s", s, got.value, want.value)
	}
	got.value, want.value = "", ""
	if got != want {
		t.Fatalf("%q: got %+v, want %+v", s, got, want)
	}
}

func TestScanMLLOGMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`{"namespace": "", "time_ms": 1759966614209, "event_type": "INTERVAL_END", "key": "block_stop", "value": null, "metadata": {"file": "/a.py", "lineno": 307, "samples_count": 12288}}`,
		`{"key": "tracked_stats", "value": {"throughput": 30.15}, "metadata": {"step": 12288}}`,
		`{"key": "k\u0065y", "time_ms": 1e3, "metadata": {"samples_count": 1, "samples_count": null}}`,
		`{"metadata": {"step": 1}, "metadata": {"epoch_num": 2}}`,
		`{"metadata": null, "value": [1, {"a": [true, false]}], "event_type": "\u00e9"}  `,
		`{"time_ms": "12"}`, `{"time_ms": 1e999}`, `{"key": 3}`, `{"metadata": []}`,
		`[1]`, `null`, `{"a": 1} x`, `{"a": 01}`, `{"a": 1.}`, `{"a": -}`, `{"a": "\x"}`, "{\"a\": \"\x01\"}",
		`{"a" 1}`, `{"a": 1,}`, `{`, ``, `{"a": tru}`, `{"time_ms": -0.5e-3}`,
		// encoding/json's nesting limit (10000), held on both sides of it.
		`{"value": ` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		`{"value": ` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"value": ` + strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000) + `}`,
	} {
		t.Run("", func(t *testing.T) { checkAgainstReference(t, s) })
	}
}

// Every real MLLOG line reads the same both ways.
func TestScanMLLOGRealLines(t *testing.T) {
	b, err := os.ReadFile("testdata/real/mlperf-amd-mi355x-llama31-8b.log")
	require.NoError(t, err)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, ":::MLLOG"); i >= 0 {
			checkAgainstReference(t, l[i+len(":::MLLOG"):])
			n++
		}
	}
	assert.Greater(t, n, 30)
}

func FuzzScanMLLOG(f *testing.F) {
	b, err := os.ReadFile("testdata/real/mlperf-amd-mi355x-llama31-8b.log")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, ":::MLLOG"); i >= 0 {
			f.Add(l[i+len(":::MLLOG"):])
		}
	}
	f.Add(`{"metadata": {"step": 1}, "metadata": {"epoch_num": 2}, "value": "\ud800"}`)
	f.Fuzz(checkAgainstReference)
}
