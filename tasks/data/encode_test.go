package data

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const (
	mistralTok = "../../tokenizer/testdata/mistral-7b-v0.1/tokenizer.json"
	qwenTok    = "../../tokenizer/testdata/qwen-2.5/tokenizer.json"
)

func TestEncodeProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name         string
		total, bytes int64
		want         string
	}{
		{"share and time left", 4 << 30, 1 << 30, "encode c4 llama: 25% (1.0 GiB of 4.0 GiB), 1200 documents, 107.4 MB/s, ETA 30s"},
		{"unknown size", 0, 1 << 30, "encode c4 llama: 1.0 GiB read, 1200 documents, 107.4 MB/s"},
		{"all read", 1 << 30, 1 << 30, "encode c4 llama: 100% (1.0 GiB of 1.0 GiB), 1200 documents, 107.4 MB/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &progress{label: "encode c4 llama", total: tc.total, bytes: tc.bytes, docs: 1200}
			assert.Equal(t, tc.want, p.line(10*time.Second))
		})
	}
}
