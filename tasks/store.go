package tasks

import (
	"context"
	"io"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/tasks/sharedstore"
)

// StoreListTarget prints every result of the store (store:ls).
func (w *Workspace) StoreListTarget(ctx context.Context, out io.Writer) error {
	return sharedstore.List(ctx, w.storeOptions(), out)
}

// StorePullTarget copies every result of the store and its log into OUTPUT_DIR/store (store:pull).
func (w *Workspace) StorePullTarget(ctx context.Context) error {
	return sharedstore.Pull(ctx, w.storeOptions(), w.path("OUTPUT_DIR", "store"), w.root)
}

// readResultArg reads a verify:result argument: a file, or store:<ID>.
func (w *Workspace) readResultArg(p string) ([]byte, error) {
	if strings.HasPrefix(p, sharedstore.RefPrefix) {
		return sharedstore.ReadResult(context.Background(), w.storeOptions(), p)
	}
	return cache.ReadFileLimit(context.Background(), p, compare.MaxResultBytes)
}
