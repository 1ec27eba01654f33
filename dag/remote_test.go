package dag

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
)

// memRemote is a shared cache between two local caches: records and the blobs they name.
type memRemote struct {
	mu      sync.Mutex
	recs    map[cache.Digest]cache.Record
	blobs   map[cache.Digest][]byte
	from    *cache.Cache // the pushing side's cache, to read blobs from
	fetches int
	pushed  []string
}

func (m *memRemote) Fetch(ctx context.Context, t *Task, key cache.Digest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fetches++
	return cache.ErrNotFound
}

func (m *memRemote) Push(ctx context.Context, t *Task, rec cache.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pushed = append(m.pushed, t.ID)
	m.recs[rec.Key] = rec
	for _, o := range rec.Outputs {
		data, err := m.from.ReadBlob(o.Digest)
		if err == nil {
			m.blobs[o.Digest] = data
		}
	}
}

// intoRemote serves memRemote's records into another cache.
type intoRemote struct {
	*memRemote
	to *cache.Cache
}

func (r intoRemote) Fetch(ctx context.Context, t *Task, key cache.Digest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetches++
	rec, ok := r.recs[key]
	if !ok {
		return cache.ErrNotFound
	}
	for _, o := range rec.Outputs {
		if _, err := r.to.PutBytes(r.blobs[o.Digest], o.Compressed); err != nil {
			return err
		}
	}
	return r.to.PutRecord(rec)
}

// TestRemoteIsAskedAfterTheLocalCache: a task that ran on one host is pushed; on a second host
// with its own cache the same task is a hit from the remote, restored like a local hit and not
// pushed back; a local hit is offered to the remote.
func TestRemoteIsAskedAfterTheLocalCache(t *testing.T) {
	a, b := newFixture(t), newFixture(t)
	in := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(in, []byte("shared input"), 0o644))
	m := &memRemote{recs: map[cache.Digest]cache.Record{}, blobs: map[cache.Digest][]byte{}, from: a.cache}

	var runs atomic.Int64
	ra := a.runner()
	ra.Root = a.dir // outputs enter keys relative to the workspace, as on two hosts
	ra.Remote = intoRemote{m, a.cache}
	require.NoError(t, ra.Run(context.Background(), copyTask(a, in, a.path("out.txt"), &runs, nil)))
	assert.Equal(t, int64(1), runs.Load())
	assert.Equal(t, []string{"upper in.txt"}, m.pushed, "a task that ran pushes its entry")
	assert.Equal(t, 1, m.fetches, "the remote is asked on a local miss")

	rb := b.runner()
	rb.Root = b.dir
	rb.Remote = intoRemote{m, b.cache}
	require.NoError(t, rb.Run(context.Background(), copyTask(b, in, b.path("out.txt"), &runs, nil)))
	assert.Equal(t, int64(1), runs.Load(), "the second host runs nothing")
	assert.Equal(t, "tasks: 0 run, 1 cached", rb.Summary())
	got, err := os.ReadFile(b.path("out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "SHARED INPUT", string(got))
	assert.Len(t, m.pushed, 1, "a hit from the remote is not pushed back")

	// A local hit is offered too, so a store set up after the fact fills.
	ra2 := a.runner()
	ra2.Root = a.dir
	ra2.Remote = intoRemote{m, a.cache}
	require.NoError(t, ra2.Run(context.Background(), copyTask(a, in, a.path("out.txt"), &runs, nil)))
	assert.Len(t, m.pushed, 2)
}

// A remote that has nothing leaves the run to the task.
func TestRemoteMissRuns(t *testing.T) {
	a := newFixture(t)
	in := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(in, []byte("x"), 0o644))
	m := &memRemote{recs: map[cache.Digest]cache.Record{}, blobs: map[cache.Digest][]byte{}, from: a.cache}
	var runs atomic.Int64
	r := a.runner()
	r.Remote = m // its Fetch never brings anything
	require.NoError(t, r.Run(context.Background(), copyTask(a, in, a.path("out.txt"), &runs, nil)))
	assert.Equal(t, int64(1), runs.Load())
}
