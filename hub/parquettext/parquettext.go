// Package parquettext reads the "text" column of a parquet shard (the hub's parquet conversions)
// one page at a time. It holds the parquet library, so only the rival-parquet program imports it:
// the targets read parquet shards through that program (see hub.Documents).
package parquettext

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/rivalbench/rival/safefile"
)

// Read streams the "text" of each row of path to fn, in file order, stopping after limit rows
// (limit <= 0: all), and returns how many fn received. Memory stays bounded by one page. A row
// whose text is null, a column that is not a plain string, or a damaged page is an error naming
// the file and the row.
func Read(path string, limit int, fn func(string) error) (int, error) {
	f, _, err := safefile.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	pf, err := parquet.OpenFile(f, fi.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return 0, fmt.Errorf("%s: not a readable parquet file: %w", path, err)
	}
	leaf, ok := pf.Schema().Lookup("text")
	if !ok {
		return 0, fmt.Errorf("%s: parquet schema has no \"text\" column (columns: %s)", path, columnNames(pf.Schema()))
	}
	if leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != parquet.ByteArray {
		return 0, fmt.Errorf("%s: parquet column \"text\" is %v, want a plain string column", path, leaf.Node.Type())
	}
	var (
		n    int
		row  int64
		vals = make([]parquet.Value, 256)
	)
	for gi, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		err := func() error {
			defer pages.Close()
			for {
				page, err := pages.ReadPage()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("%s: row group %d, near row %d: %w", path, gi, row, err)
				}
				stop, err := eachValue(page, vals, func(v parquet.Value) (bool, error) {
					if v.IsNull() {
						return false, fmt.Errorf("%s: row %d: \"text\" is null", path, row)
					}
					if err := fn(string(v.ByteArray())); err != nil {
						return false, fmt.Errorf("%s: row %d: %w", path, row, err)
					}
					row++
					n++
					return limit > 0 && n >= limit, nil
				})
				parquet.Release(page)
				if err != nil || stop {
					return err
				}
			}
		}()
		if err != nil {
			return n, err
		}
		if limit > 0 && n >= limit {
			break
		}
	}
	return n, nil
}

// eachValue feeds a page's values to fn until fn says stop.
func eachValue(page parquet.Page, buf []parquet.Value, fn func(parquet.Value) (bool, error)) (bool, error) {
	r := page.Values()
	for {
		k, err := r.ReadValues(buf)
		for _, v := range buf[:k] {
			stop, ferr := fn(v)
			if ferr != nil || stop {
				return stop, ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

func columnNames(s *parquet.Schema) string {
	var names []string
	for _, p := range s.Columns() {
		names = append(names, strings.Join(p, "."))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
