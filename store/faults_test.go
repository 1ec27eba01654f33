package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container/registrytest"
)

// seeded is n bytes any process derives alike from seed.
func seeded(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// killAt returns a Progress hook that calls kill once, when op has moved half of a blob.
func killAt(op string, kill func()) func(Progress) {
	var once sync.Once
	return func(p Progress) {
		if p.Op == op && p.Done > p.Total/2 {
			once.Do(kill)
		}
	}
}

// tempFiles lists files a writer left in the cache's blob folder.
func tempFiles(t *testing.T, c *cache.Cache) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(c.Dir, "blobs", ".put-*"))
	require.NoError(t, err)
	return m
}

// TestRegistryKilledMidPush: a registry killed while a blob streams leaves no entry anyone can pull
// (the manifest comes last); once it is back, the same push completes and pulls whole.
func TestRegistryKilledMidPush(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	a, b := newCache(t), newCache(t)
	rec := record(t, a, "encode killed-push", randomBytes(t, 64<<20), []byte("index"))
	s := open(t, srv.Addr, Options{Attempts: 1, Timeout: 2 * time.Second, Progress: killAt("push", srv.Kill)})
	_, err := s.PushAction(context.Background(), a, rec)
	require.Error(t, err)

	srv.Restart()
	s2 := open(t, srv.Addr, Options{})
	has, err := s2.Has(context.Background(), ActionTag(rec.Key))
	require.NoError(t, err)
	assert.False(t, has, "no manifest names the half-pushed blobs")
	_, err = s2.PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	assert.ErrorIs(t, err, ErrNotFound)

	pushed, err := s2.PushAction(context.Background(), a, rec)
	require.NoError(t, err)
	assert.True(t, pushed)
	got, err := s2.PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	require.NoError(t, err)
	assert.Equal(t, rec.Outputs[0].Digest, got.Outputs[0].Digest)
	assert.True(t, b.HasBlob(rec.Outputs[0].Digest))
}

// TestRetryPerBlob: a registry that dies mid-blob and comes back within the retries costs that
// blob a second transfer, not the push.
func TestRetryPerBlob(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	a, b := newCache(t), newCache(t)
	rec := record(t, a, "encode retried", randomBytes(t, 48<<20))
	restarted := make(chan struct{})
	restart := func() { srv.Kill(); go func() { srv.Restart(); close(restarted) }() }
	kill := killAt("push", restart)
	var prev int64
	attempts := 1
	s := open(t, srv.Addr, Options{Attempts: 6, Timeout: 2 * time.Second, Progress: func(p Progress) {
		if p.Done < prev {
			attempts++ // the blob streams again from its start
		}
		prev = p.Done
		kill(p)
	}})
	pushed, err := s.PushAction(context.Background(), a, rec)
	require.NoError(t, err)
	assert.True(t, pushed)
	<-restarted
	assert.Equal(t, 2, attempts, "the blob was sent twice")
	_, err = open(t, srv.Addr, Options{}).PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	require.NoError(t, err)
}

// TestRegistryKilledMidPull: a pull cut off mid-blob stores nothing under the blob's digest and
// leaves no temporary file; the next pull, with the registry back, is whole.
func TestRegistryKilledMidPull(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	a, b := newCache(t), newCache(t)
	rec := record(t, a, "encode killed-pull", randomBytes(t, 64<<20))
	_, err := open(t, srv.Addr, Options{}).PushAction(context.Background(), a, rec)
	require.NoError(t, err)

	s := open(t, srv.Addr, Options{Attempts: 1, Timeout: 2 * time.Second, Progress: killAt("pull", srv.Kill)})
	_, err = s.PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	require.Error(t, err)
	assert.False(t, b.HasBlob(rec.Outputs[0].Digest))
	assert.Empty(t, tempFiles(t, b))

	srv.Restart()
	got, err := open(t, srv.Addr, Options{}).PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	require.NoError(t, err)
	data := readBlob(t, b, got.Outputs[0].Digest)
	assert.Equal(t, rec.Outputs[0].Digest, cache.HashBytes(data))
}

// The helper process of TestSameEntryFromTwoProcesses: it pushes the entry STORE_TEST_PUSH names.
func TestPushHelperProcess(t *testing.T) {
	addr := os.Getenv("STORE_TEST_PUSH")
	if addr == "" {
		t.Skip("a helper of TestSameEntryFromTwoProcesses")
	}
	c := newCache(t)
	data := seeded(42, 24<<20)
	d, err := c.PutBytes(data, false)
	require.NoError(t, err)
	key := cache.HashBytes([]byte("one key for both processes"))
	rec := cache.Record{Key: key, Task: "encode shared", Created: time.Now().UTC(), Inputs: []cache.KeyPart{{Kind: "task", Name: "id", Value: "encode shared"}},
		Outputs: []cache.Output{{Path: "data/shared.bin", Digest: d, Size: int64(len(data)), Mode: 0o644}}}
	_, err = open(t, addr, Options{}).PushAction(context.Background(), c, rec)
	require.NoError(t, err)
}

// TestSameEntryFromTwoProcesses: two processes push one entry at once; the store ends with one
// valid entry, whichever manifest landed last.
func TestSameEntryFromTwoProcesses(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPushHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STORE_TEST_PUSH="+srv.Addr)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		procs, outs = append(procs, cmd), append(outs, &out)
	}
	for i, p := range procs {
		require.NoError(t, p.Wait(), outs[i].String())
	}
	b := newCache(t)
	s := open(t, srv.Addr, Options{})
	got, err := s.PullAction(context.Background(), b, cache.HashBytes([]byte("one key for both processes")), 1)
	require.NoError(t, err)
	data := readBlob(t, b, got.Outputs[0].Digest)
	assert.Equal(t, seeded(42, 24<<20), data)
	tags, err := s.Tags(context.Background(), "action-")
	require.NoError(t, err)
	assert.Len(t, tags, 1)
}

// A manifest whose bytes were changed in the registry's storage is not read as an entry.
func TestTamperedManifestIsRejected(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	a, b := newCache(t), newCache(t)
	rec := record(t, a, "encode manifest", []byte("content"))
	s := open(t, srv.Addr, Options{Attempts: 1})
	_, err := s.PushAction(context.Background(), a, rec)
	require.NoError(t, err)
	e, err := s.Get(context.Background(), ActionTag(rec.Key))
	require.NoError(t, err)
	// The record (the entry's config) rewritten in storage: another task's outputs.
	p := srv.BlobPath(e.Config.Digest.Encoded())
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	forged := bytes.Replace(data, []byte("encode manifest"), []byte("encode forged!!"), 1)
	require.NotEqual(t, data, forged)
	require.NoError(t, os.WriteFile(p, forged, 0o644))
	_, err = s.PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	assert.ErrorIs(t, err, ErrIntegrity)
	assert.Contains(t, err.Error(), hex.EncodeToString(rec.Key[:])[:16])
}

// TestPullResumes: a registry that dies mid-blob and comes back costs the pull a ranged request for
// the rest of the blob, not a second transfer of what already arrived; the result is whole.
func TestPullResumes(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	a, b := newCache(t), newCache(t)
	rec := record(t, a, "encode resumed", randomBytes(t, 48<<20))
	_, err := open(t, srv.Addr, Options{}).PushAction(context.Background(), a, rec)
	require.NoError(t, err)
	restarted := make(chan struct{})
	kill := killAt("pull", func() { srv.Kill(); go func() { srv.Restart(); close(restarted) }() })
	var prev int64
	restartedFromZero := false
	s := open(t, srv.Addr, Options{Attempts: 1, Timeout: 2 * time.Second, Progress: func(p Progress) {
		if p.Done < prev {
			restartedFromZero = true
		}
		prev = p.Done
		kill(p)
	}})
	got, err := s.PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	require.NoError(t, err)
	<-restarted
	assert.False(t, restartedFromZero, "the pull went on from where it broke off")
	assert.Equal(t, rec.Outputs[0].Digest, cache.HashBytes(readBlob(t, b, got.Outputs[0].Digest)))
}
