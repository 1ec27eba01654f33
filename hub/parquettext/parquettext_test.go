package parquettext_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub/parquettext"
)

type bookRow struct {
	Text string `parquet:"text"`
	ID   int64  `parquet:"id"`
}

// parquetFile writes rows like the hub's parquet conversions, in small row groups and pages.
func parquetFile(t testing.TB, texts []string, rowsPerGroup int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "0000.parquet")
	f, err := os.Create(p)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[bookRow](f, parquet.MaxRowsPerRowGroup(rowsPerGroup), parquet.PageBufferSize(256))
	rows := make([]bookRow, len(texts))
	for i, s := range texts {
		rows[i] = bookRow{Text: s, ID: int64(i)}
	}
	_, err = w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	return p
}

// FuzzRead feeds arbitrary bytes, seeded with a real parquet file of the hub's layout, to the
// reader: an error, never a panic, and never more rows than the limit.
func FuzzRead(f *testing.F) {
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
		n, _ := parquettext.Read(p, 5, func(string) error { return nil })
		if n < 0 || n > 5 {
			t.Fatalf("read %d rows with a limit of 5", n)
		}
	})
}

// An error from fn stops the read and names the row.
func TestReadCallbackError(t *testing.T) {
	p := parquetFile(t, []string{"a", "b", "c"}, 1)
	n, err := parquettext.Read(p, 0, func(s string) error {
		if s == "b" {
			return fmt.Errorf("no b")
		}
		return nil
	})
	require.EqualError(t, err, p+": row 1: no b")
	require.Equal(t, 1, n)
}
