package hub_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/hub"
)

// FuzzReadParquet feeds arbitrary bytes, seeded with a real parquet file
// of the hub's layout, to the shard reader: an error, never a panic, and
// never more documents than the limit.
func FuzzReadParquet(f *testing.F) {
	raw, err := os.ReadFile(parquetFile(f, []string{"first document", "second", ""}, 2))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte("PAR1PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "0000.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		n, _ := hub.ReadDocuments(p, hub.FormatParquet, 5, func(string) error { return nil })
		if n < 0 || n > 5 {
			t.Fatalf("read %d documents with a limit of 5", n)
		}
	})
}
