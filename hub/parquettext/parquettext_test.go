package parquettext_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub/hubtest"
	"github.com/rivalbench/rival/hub/parquettext"
)

// FuzzRead feeds arbitrary bytes, seeded with a real parquet file of the hub's layout, to the
// reader: an error, never a panic, and never more rows than the limit.
func FuzzRead(f *testing.F) {
	raw, err := os.ReadFile(hubtest.ParquetFile(f, []string{"first document", "second", ""}, 2))
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
		n, _ := parquettext.Read(p, 5, func(string) error { return nil })
		if n < 0 || n > 5 {
			t.Fatalf("read %d rows with a limit of 5", n)
		}
	})
}

// An error from fn stops the read and names the row.
func TestReadCallbackError(t *testing.T) {
	p := hubtest.ParquetFile(t, []string{"a", "b", "c"}, 1)
	n, err := parquettext.Read(p, 0, func(s string) error {
		if s == "b" {
			return fmt.Errorf("no b")
		}
		return nil
	})
	require.EqualError(t, err, p+": row 1: no b")
	require.Equal(t, 1, n)
}
