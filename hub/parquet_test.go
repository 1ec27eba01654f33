package hub_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/hub/hubtest"
	"github.com/rivalbench/rival/internal/goprog"
)

// documents reads shards as fetch does: parquet through rival-parquet, built on first use into a
// folder of the tests' own.
var documents hub.Documents

func TestMain(m *testing.M) {
	bin, err := os.MkdirTemp("", "rival-parquet-test-")
	if err != nil {
		panic(err)
	}
	documents.Parquet = &goprog.Helper{Program: hub.ParquetProgram, BinDir: bin, Notice: io.Discard}
	code := m.Run()
	os.RemoveAll(bin)
	os.Exit(code)
}

// The program hands over each text byte for byte, whatever it holds: invalid UTF-8, NUL bytes,
// newlines, an empty string, a text larger than the pipe's buffer.
func TestParquetTextsArriveUnchanged(t *testing.T) {
	texts := []string{"plain", "", "line\nbreak\r\n", "nul\x00inside", "\xff\xfe not UTF-8", strings.Repeat("long text ", 1<<15)}
	got, err := collect(hubtest.ParquetFile(t, texts, 2), hub.FormatParquet, 0)
	require.NoError(t, err)
	assert.Equal(t, texts, got)
}

// An error from fn stops the program at once and names the row; the rows before it were read.
func TestParquetCallbackErrorStops(t *testing.T) {
	texts := make([]string, 5000)
	for i := range texts {
		texts[i] = strings.Repeat("x", 100)
	}
	p := hubtest.ParquetFile(t, texts, 512)
	stop := errors.New("disk full")
	calls := 0
	n, err := documents.Read(context.Background(), p, hub.FormatAuto, 0, func(string) error {
		calls++
		if calls == 1001 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.EqualError(t, err, p+": row 1000: disk full")
	assert.Equal(t, 1000, n)
}

// A cancelled context stops the read; no program is left running.
func TestParquetCancelled(t *testing.T) {
	p := hubtest.ParquetFile(t, []string{"a", "b", "c"}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	rows := 0
	_, err := documents.Read(ctx, p, hub.FormatAuto, 0, func(string) error {
		rows++
		cancel()
		return nil
	})
	// Also when the program has written all three rows and exited before the cancel is seen.
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, rows, "no row is handed on after the cancel")
}

// Without a program to read parquet with, a parquet shard is refused, naming it; other formats
// need none.
func TestParquetWithoutProgram(t *testing.T) {
	p := hubtest.ParquetFile(t, []string{"a"}, 1)
	_, err := (hub.Documents{}).Read(context.Background(), p, hub.FormatAuto, 0, func(string) error { return nil })
	require.ErrorContains(t, err, p+": a parquet shard, and no reader for parquet was given")
}

// A compressed shard may be far smaller than one of its texts: a 1 MiB text of one repeated
// sentence, zstd-compressed, arrives whole.
func TestParquetTextLargerThanTheShard(t *testing.T) {
	type row struct {
		Text string `parquet:"text"`
	}
	long := strings.Repeat("the same sentence again. ", 1<<20/25)
	p := filepath.Join(t.TempDir(), "0000.parquet")
	// As writers that keep no statistics of long values store it (pyarrow's default for them).
	f, err := os.Create(p)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[row](f, parquet.Compression(&zstd.Codec{}), parquet.DataPageStatistics(false),
		parquet.SkipPageBounds("text"), parquet.ColumnIndexSizeLimit(func([]string) int { return 16 }))
	_, err = w.Write([]row{{"short"}, {long}, {"after"}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Less(t, fi.Size(), int64(len(long)), "the shard is smaller than its text")
	got, err := collect(p, hub.FormatParquet, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"short", long, "after"}, got)
}
