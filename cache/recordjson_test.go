package cache

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordSamples are records as PutRecord writes them, with the shapes the
// tasks store (no inputs, several; no meta, an object; outputs compressed
// or not) and text that only encoding/json reads (escapes, odd numbers).
func recordSamples(t testing.TB) [][]byte {
	t.Helper()
	d := HashBytes([]byte("content"))
	k := HashBytes([]byte("key"))
	created := time.Date(2026, 11, 27, 13, 4, 5, 123456789, time.FixedZone("", 3600))
	recs := []Record{
		{Schema: KeySchema, Key: k, Task: "t 1", Outputs: []Output{{Digest: d, Size: 18, AbsPath: "/tmp/ws/o1.txt"}}},
		{Schema: KeySchema, Key: k, Task: "encode bc llama", Created: created, DurationMS: 1234,
			Inputs:  []KeyPart{{"task", "encode", ""}, {"file", "data/x.jsonl", d.String()}, {"env", "LANG", "en_US.UTF-8"}},
			Outputs: []Output{{Path: "out/x.bin", AbsPath: "/w/out/x.bin", Digest: d, Size: 1 << 40, Mode: 0o755, Compressed: true}, {Path: "out/x.idx", Digest: k, Size: 0}},
			Meta:    json.RawMessage(`{"read": 12, "kept": [1, 2.5e3, -0.1], "note": "a\"b\\c\u00e9", "x": null, "t": true, "o": {}}`)},
		{Key: k, Inputs: []KeyPart{}, Outputs: []Output{}, Meta: json.RawMessage(`"just text"`)},
		{Key: k, Task: "ünïcödé \t tab \"quoted\" <html> & \u2028", Meta: json.RawMessage(`[[], [{}], -12]`)},
		{Key: k, DurationMS: -1 << 63, Outputs: []Output{{Digest: d, Size: 1<<63 - 1, Mode: 1<<32 - 1}}, Meta: json.RawMessage(`7`)},
	}
	var out [][]byte
	for _, r := range recs {
		data, err := json.MarshalIndent(r, "", "  ")
		require.NoError(t, err)
		out = append(out, data)
		data, err = json.Marshal(r)
		require.NoError(t, err)
		out = append(out, data)
	}
	ks, ds := k.String(), d.String()
	for _, s := range []string{
		`{"key":"` + ks + `","KEY":"` + ds + `"}`,    // case-insensitive duplicate
		`{"Key":"` + ks + `"}`,                       // another case
		`{"key":"` + ks + `","key":"` + ds + `"}`,    // repeated
		`{"key":"` + ks + `","unknown":[1,{"a":2}]}`, // unknown field
		`{"key":"` + strings.ToUpper(ks) + `"}`,      // uppercase digest
		`{"key":"` + ks[:63] + `"}`,                  // short digest
		`{"key":null,"task":null,"inputs":null,"outputs":null,"meta":null}`,
		`{"key":"` + ks + `","duration_ms":1.5}`,
		`{"key":"` + ks + `","duration_ms":1e3}`,
		`{"key":"` + ks + `","duration_ms":"1"}`,
		`{"key":"` + ks + `","duration_ms":9223372036854775808}`,
		`{"key":"` + ks + `","duration_ms":-9223372036854775809}`,
		`{"key":"` + ks + `","duration_ms":-0}`,
		`{"key":"` + ks + `","outputs":[{"mode":-1}]}`,
		`{"key":"` + ks + `","outputs":[{"mode":-0}]}`,
		`{"key":"` + ks + `","outputs":[{"mode":4294967296}]}`,
		`{"key":"` + ks + `","outputs":[{"compressed":1}]}`,
		`{"key":"` + ks + `","outputs":[{"digest":"` + ds + `","digest":"` + ks + `"}]}`,
		`{"key":"` + ks + `","outputs":[null]}`,
		`{"key":"` + ks + `","outputs":{}}`,
		`{"key":"` + ks + `","inputs":[{"kind":"task"}]}`,
		`{"key":"` + ks + `","task":"\u0041\n"}`,
		`{"key":"` + ks + `","task":"` + "\xff\xfe" + `"}`,
		`{"key":"` + ks + `","created":"2026-13-01T00:00:00Z"}`,
		`{"key":"` + ks + `","created":"2026-11-27T13:04:05+01:00"}`,
		`{"key":"` + ks + `","created":"2026-11-27 13:04:05Z"}`,
		`{"key":"` + ks + `","created":1}`,
		`{"key":"` + ks + `","meta":{"a":"}]\"{["}}`,
		`{"key":"` + ks + `"} x`,
		`{"key":"` + ks + `"}` + " \n\t\r",
		`[]`, `null`, `"x"`, ``, `{`, `{}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// checkDecodeRecord holds decodeRecord, and recordReader alone, to
// encoding/json on data.
func checkDecodeRecord(t *testing.T, data []byte) {
	var want, got Record
	wantErr := json.Unmarshal(data, &want)
	gotErr := decodeRecord(data, &got)
	require.Equal(t, wantErr == nil, gotErr == nil, "%q: encoding/json says %v, decodeRecord %v", data, wantErr, gotErr)
	if wantErr == nil {
		require.Equal(t, want, got, "%q", data)
	}
	var fast Record
	if json.Valid(data) && (&recordReader{data: data}).record(&fast) {
		require.NoError(t, wantErr, "%q: read fast, refused by encoding/json", data)
		require.Equal(t, want, fast, "%q", data)
	}
}

func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	for _, data := range recordSamples(t) {
		checkDecodeRecord(t, data)
		// Every prefix, and every byte changed to a character that matters
		// to JSON, reads as encoding/json reads it.
		for i := range data {
			checkDecodeRecord(t, data[:i])
			for _, c := range []byte{'"', '\\', '{', '}', '[', ']', ',', ':', ' ', '0', 'e', '-', 'n', 0} {
				mut := append([]byte(nil), data...)
				mut[i] = c
				checkDecodeRecord(t, mut)
			}
		}
	}
}

// The records PutRecord writes are read without encoding/json, unless a
// string holds an escape.
func TestDecodeRecordReadsWhatPutRecordWrites(t *testing.T) {
	samples := recordSamples(t)
	for _, data := range append(samples[:6:6], samples[8:10]...) {
		var r Record
		assert.True(t, (&recordReader{data: data}).record(&r), "%s", data)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, data := range recordSamples(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecodeRecord(t, data) })
}

func BenchmarkDecodeRecord(b *testing.B) {
	data := recordSamples(b)[0]
	// CPU time beside wall time: on a shared machine it is what the two are
	// compared by.
	b.Run("decodeRecord", func(b *testing.B) {
		b.ReportAllocs()
		c0 := selfCPU()
		defer func() { b.ReportMetric(float64((selfCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			var r Record
			if err := decodeRecord(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		c0 := selfCPU()
		defer func() { b.ReportMetric(float64((selfCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			var r Record
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
