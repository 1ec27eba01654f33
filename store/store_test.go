package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container/registrytest"
)

// newCache is an empty local cache: one per simulated host.
func newCache(t testing.TB) *cache.Cache {
	t.Helper()
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	return c
}

// record stores outputs with the given contents in c and returns their action record.
func record(t testing.TB, c *cache.Cache, task string, contents ...[]byte) cache.Record {
	t.Helper()
	rec := cache.Record{Key: cache.HashBytes([]byte(task + time.Now().String())), Task: task, Created: time.Now().UTC(),
		Inputs: []cache.KeyPart{{Kind: "task", Name: "id", Value: task}}}
	for i, data := range contents {
		d, err := c.PutBytes(data, i%2 == 1)
		require.NoError(t, err)
		rec.Outputs = append(rec.Outputs, cache.Output{Path: filepath.Join("out", task, string(rune('a'+i))), Digest: d, Size: int64(len(data)), Mode: 0o644, Compressed: i%2 == 1})
	}
	return rec
}

func open(t testing.TB, addr string, opt Options) *Store {
	t.Helper()
	loc, err := ParseLocation("oci://" + addr + "/team/rival")
	require.NoError(t, err)
	s, err := Open(context.Background(), loc, opt)
	require.NoError(t, err)
	return s
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// readBlob is a blob's content as the cache c holds it.
func readBlob(t testing.TB, c *cache.Cache, d cache.Digest) []byte {
	t.Helper()
	rc, err := c.OpenBlob(d)
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return data
}

// TestRoundTrip: what one host pushes another pulls, byte for byte, over plain HTTP on loopback,
// over TLS with a CA the test made, and with htpasswd credentials.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   registrytest.Options
		plain bool
	}{
		{"plain HTTP on loopback", registrytest.Options{}, true},
		{"TLS", registrytest.Options{TLS: true}, false},
		{"TLS with htpasswd", registrytest.Options{TLS: true, User: "alice", Password: "s3cret"}, false},
		{"plain HTTP with htpasswd", registrytest.Options{User: "alice", Password: "s3cret"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := registrytest.StartServer(t, tc.opt)
			opt := Options{CAFile: srv.CAFile}
			if tc.opt.User != "" {
				opt.Credential = func(ctx context.Context, host string) (Credential, error) {
					assert.Equal(t, srv.Addr, host)
					return Credential{Username: tc.opt.User, Password: tc.opt.Password}, nil
				}
			}
			a, b := newCache(t), newCache(t)
			rec := record(t, a, "encode x", randomBytes(t, 3<<20), []byte(`{"manifest": true}`), nil)
			sa := open(t, srv.Addr, opt)
			assert.Equal(t, tc.plain, sa.PlainHTTP())
			pushed, err := sa.PushAction(context.Background(), a, rec)
			require.NoError(t, err)
			assert.True(t, pushed)
			pushed, err = sa.PushAction(context.Background(), a, rec)
			require.NoError(t, err)
			assert.False(t, pushed, "an entry is immutable: a second push leaves it")

			sb := open(t, srv.Addr, opt)
			got, err := sb.PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
			require.NoError(t, err)
			assert.Equal(t, rec.Task, got.Task)
			require.Len(t, got.Outputs, 3)
			for i, o := range rec.Outputs {
				assert.Equal(t, o.Digest, got.Outputs[i].Digest)
				assert.Empty(t, got.Outputs[i].AbsPath, "no path of the pushing host travels")
				assert.Equal(t, readBlob(t, a, o.Digest), readBlob(t, b, o.Digest))
			}
			_, err = sb.PullAction(context.Background(), b, cache.HashBytes([]byte("absent")), 1)
			assert.ErrorIs(t, err, ErrNotFound)
		})
	}
}

// TestRefusals: wrong credentials, none at all, an unreachable store, a TLS store whose CA is not
// trusted, a store that accepts connections and never answers: each fails Open within its bounded
// time with an error that says what to do.
func TestRefusals(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{TLS: true, User: "alice", Password: "s3cret"})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := closed.Addr().String()
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	wrong := func(ctx context.Context, host string) (Credential, error) {
		return Credential{Username: "alice", Password: "wrong"}, nil
	}
	for _, tc := range []struct {
		name string
		addr string
		opt  Options
		want string
		is   error
	}{
		{"wrong password", srv.Addr, Options{CAFile: srv.CAFile, Credential: wrong}, "docker login " + srv.Addr, ErrUnauthorized},
		{"no credentials", srv.Addr, Options{CAFile: srv.CAFile}, "docker login", ErrUnauthorized},
		{"untrusted CA", srv.Addr, Options{}, "RIVAL_STORE_CA", nil},
		{"unreachable", deadAddr, Options{Timeout: time.Second}, "connection refused", nil},
		{"silent", silent.Addr().String(), Options{Timeout: 500 * time.Millisecond}, "no answer within 1s", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc, err := ParseLocation("oci://" + tc.addr + "/team/rival")
			require.NoError(t, err)
			start := time.Now()
			_, err = Open(context.Background(), loc, tc.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "wrong", "a password never appears in an error")
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Less(t, time.Since(start), 30*time.Second)
		})
	}
}

// TestPlainHTTPNeedsLoopbackOrInsecure: a registry that is not on a loopback address must speak
// TLS unless named insecure. The test registry listens on loopback, so it is reached through
// another name for it: its IPv4-mapped form is not loopback to Location, only to the kernel.
func TestPlainHTTPNeedsLoopbackOrInsecure(t *testing.T) {
	srv := registrytest.Start(t)
	_, port, _ := net.SplitHostPort(srv)
	addrs, _ := net.InterfaceAddrs()
	var other string
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			other = ipn.IP.String()
		}
	}
	if other == "" {
		t.Skip("this host has no address but loopback")
	}
	// The registry listens on 127.0.0.1 only: connect through a forwarder on the other address.
	l, err := net.Listen("tcp", net.JoinHostPort(other, "0"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go forward(l, "127.0.0.1:"+port)
	loc, err := ParseLocation("oci://" + l.Addr().String() + "/team/rival")
	require.NoError(t, err)
	require.False(t, loc.Loopback())
	_, err = Open(context.Background(), loc, Options{Timeout: 2 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RIVAL_STORE_INSECURE=1")
	s, err := Open(context.Background(), loc, Options{Timeout: 2 * time.Second, Insecure: true})
	require.NoError(t, err)
	assert.True(t, s.PlainHTTP())
}

func forward(l net.Listener, to string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			d, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			defer d.Close()
			go io.Copy(d, c)
			io.Copy(c, d)
		}()
	}
}

// TestTamperedBlobIsRejected: a blob replaced in the registry's storage (same length, other bytes)
// and one truncated there are detected on pull, reported with the entry, and never enter the
// cache under the recorded digest.
func TestTamperedBlobIsRejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func(data []byte) []byte
	}{
		{"replaced", func(data []byte) []byte { out := bytes.Clone(data); out[len(out)/2] ^= 0xff; return out }},
		{"truncated", func(data []byte) []byte { return data[:len(data)/2] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := registrytest.StartServer(t, registrytest.Options{})
			a, b := newCache(t), newCache(t)
			data := randomBytes(t, 1<<20)
			rec := record(t, a, "encode tampered", data)
			s := open(t, srv.Addr, Options{Attempts: 1})
			_, err := s.PushAction(context.Background(), a, rec)
			require.NoError(t, err)
			e, err := s.Get(context.Background(), ActionTag(rec.Key))
			require.NoError(t, err)
			p := srv.BlobPath(e.Blobs[0].Digest.Encoded())
			require.FileExists(t, p)
			require.NoError(t, os.WriteFile(p, tc.mangle(data), 0o644))

			_, err = s.PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrIntegrity)
			assert.Contains(t, err.Error(), e.Tag)
			assert.False(t, b.HasBlob(rec.Outputs[0].Digest), "a blob whose BLAKE3 differs is never stored under the recorded digest")
		})
	}
}

// TestLargeBlobProgress: a blob of several chunks reports progress in both directions, ending at
// its size.
func TestLargeBlobProgress(t *testing.T) {
	srv := registrytest.Start(t)
	var last map[string]Progress = map[string]Progress{}
	opt := Options{Progress: func(p Progress) { last[p.Op] = p }}
	a, b := newCache(t), newCache(t)
	rec := record(t, a, "encode big", randomBytes(t, 9<<20))
	_, err := open(t, srv, opt).PushAction(context.Background(), a, rec)
	require.NoError(t, err)
	_, err = open(t, srv, opt).PullAction(context.Background(), b, rec.Key, len(rec.Outputs))
	require.NoError(t, err)
	for _, op := range []string{"push", "pull"} {
		assert.Equal(t, int64(9<<20), last[op].Done, op)
		assert.Equal(t, int64(9<<20), last[op].Total, op)
	}
}

func TestResults(t *testing.T) {
	srv := registrytest.Start(t)
	a := newCache(t)
	s := open(t, srv, Options{})
	empty, _, err := s.Results(context.Background())
	require.NoError(t, err)
	assert.Empty(t, empty, "an empty repository lists no result")
	for i, date := range []string{"2026-11-02T10:00:00Z", "2026-11-01T10:00:00Z"} {
		body := []byte(`{"n":` + string(rune('0'+i)) + `}`)
		d, err := a.PutBytes(body, true)
		require.NoError(t, err)
		logd, err := a.PutBytes([]byte("log "+date), true)
		require.NoError(t, err)
		pushed, err := s.PushResult(context.Background(), a, File{Name: "result", Digest: d, Size: int64(len(body))},
			&File{Name: "log", Digest: logd, Size: int64(len("log " + date))}, map[string]string{"date": date, "host": "h" + hex.EncodeToString([]byte{byte(i)})})
		require.NoError(t, err)
		require.True(t, pushed)
	}
	rs, problems, err := s.Results(context.Background())
	require.NoError(t, err)
	assert.Empty(t, problems)
	require.Len(t, rs, 2)
	assert.Equal(t, "2026-11-01T10:00:00Z", rs[0].Listing["date"], "sorted by date")
	b := newCache(t)
	d, err := s.Pull(context.Background(), b, rs[0].Entry, 0, true)
	require.NoError(t, err)
	assert.Equal(t, `{"n":1}`, string(readBlob(t, b, d)))
}

// A lookup of an entry the store does not hold is answered at once: a miss is no failure to retry.
func TestMissIsNotRetried(t *testing.T) {
	srv := registrytest.Start(t)
	s := open(t, srv, Options{Attempts: 5})
	tries := 0
	onAttempt = func() { tries++ }
	t.Cleanup(func() { onAttempt = nil })
	_, err := s.PullAction(context.Background(), newCache(t), cache.HashBytes([]byte("absent")), 1)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, 1, tries, "one request, no back-off")
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{ErrNotFound, false},
		{ErrIntegrity, false},
		{context.Canceled, false},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, true},
	} {
		assert.Equal(t, tc.want, retryable(tc.err), "%v", tc.err)
	}
}

// An entry whose record holds more outputs than the task makes (a made-up entry of 200 outputs for
// a 3-output task) is refused, saying so, before any of its blobs is pulled.
func TestForeignEntryRefusedBeforeAnyBlobMoves(t *testing.T) {
	srv := registrytest.Start(t)
	a, b := newCache(t), newCache(t)
	s := open(t, srv, Options{})
	var outs [][]byte
	for i := range 5 {
		outs = append(outs, randomBytes(t, 64<<10+i))
	}
	rec := record(t, a, "encode many", outs...)
	_, err := s.PushAction(context.Background(), a, rec)
	require.NoError(t, err)
	_, err = s.PullAction(context.Background(), b, rec.Key, 3)
	require.ErrorIs(t, err, ErrNotTheTask)
	assert.Contains(t, err.Error(), "the entry is not this task's: its record holds 5 outputs and the task makes 3; refused before any blob was pulled")
	st, err := b.Stats()
	require.NoError(t, err)
	assert.Zero(t, st.Blobs, "no blob reached the cache")
}
