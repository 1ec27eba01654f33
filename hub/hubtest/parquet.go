package hubtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"
)

type bookRow struct {
	Text string `parquet:"text"`
	ID   int64  `parquet:"id"`
}

// ParquetFile writes texts as the hub's parquet conversions hold them (a "text" string column
// among others) into a new file, in row groups of rowsPerGroup rows and small pages, so readers
// cross both boundaries, and returns its path.
func ParquetFile(t testing.TB, texts []string, rowsPerGroup int64) string {
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
