package hub_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/term"

	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/hub/hubtest"
)

const commitA = "0123456789abcdef0123456789abcdef01234567"

func content(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i*7%26)
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func newClient(t *testing.T, srv *hubtest.Server, mod func(*hub.Options)) *hub.Client {
	t.Helper()
	o := hub.Options{Endpoint: srv.URL(), MaxAttempts: 4, Backoff: time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	c, err := hub.New(o)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// requireNoArtifacts checks that a failed download left neither the final file nor (unless kept
// for resuming) the .part, nor the lock.
func requireNoArtifacts(t *testing.T, dest string, partKept bool) {
	t.Helper()
	assert.NoFileExists(t, dest)
	assert.NoFileExists(t, dest+".lock")
	if partKept {
		assert.FileExists(t, dest+".part")
	} else {
		assert.NoFileExists(t, dest+".part")
	}
}

func bytesHits(srv *hubtest.Server) []hubtest.Hit {
	var out []hubtest.Hit
	for _, h := range srv.Hits() {
		if h.Status != 302 {
			out = append(out, h)
		}
	}
	return out
}

func TestDownload(t *testing.T) {
	data := content(5000)
	const llama = "meta-llama/Llama-3.1-8B"
	type tc struct {
		name     string
		file     hubtest.File
		req      hub.Request // Repo/Revision/File default to file's
		token    string
		attempts int
		wantErr  error  // errors.Is target
		wantMsg  string // substring of the error
		partKept bool   // on error: the .part stays for resuming
		verified bool
		check    func(t *testing.T, srv *hubtest.Server)
	}
	cases := []tc{
		{name: "regular file served by the hub", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "config.json", Content: data}},
		{name: "LFS file through the CDN", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true}, verified: true,
			check: func(t *testing.T, srv *hubtest.Server) {
				hits := srv.Hits()
				require.Len(t, hits, 2)
				assert.Equal(t, "hub", hits[0].Host)
				assert.Equal(t, 302, hits[0].Status)
				assert.Equal(t, "cdn", hits[1].Host)
			}},
		{name: "gated repo without token", file: hubtest.File{Repo: llama, Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Gated: true},
			wantErr: hub.ErrNeedsToken, wantMsg: "needs HF_TOKEN: the repo meta-llama/Llama-3.1-8B is gated, accept its licence on the hub and put HF_TOKEN=... in secrets.env"},
		{name: "gated repo with a token lacking access", token: "hf_wrong_secret_token", file: hubtest.File{Repo: llama, Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Gated: true},
			wantErr: hub.ErrNeedsToken, wantMsg: "has no access to meta-llama/Llama-3.1-8B"},
		{name: "gated repo with the token, which stays off the CDN", token: hubtest.Token, file: hubtest.File{Repo: llama, Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Gated: true}, verified: true,
			check: func(t *testing.T, srv *hubtest.Server) {
				for _, h := range srv.Hits() {
					assert.Equal(t, h.Host == "hub", h.Auth, "Authorization on %s", h.Host)
				}
			}},
		{name: "unknown repo, anonymous 401", file: hubtest.File{Repo: "other/repo", Revision: commitA, Path: "x", Content: data}, req: hub.Request{Repo: "nobody/nothing"},
			wantErr: hub.ErrNotFound, wantMsg: "model repo nobody/nothing does not exist"},
		{name: "unknown revision", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "config.json", Content: data}, req: hub.Request{Revision: "v9"},
			wantErr: hub.ErrNotFound, wantMsg: "revision v9 does not exist"},
		{name: "unknown file", file: hubtest.File{Dataset: true, Repo: "allenai/c4", Revision: commitA, Path: "en/a.json.gz", Content: data, LFS: true}, req: hub.Request{File: "en/b.json.gz"},
			wantErr: hub.ErrNotFound, wantMsg: "file en/b.json.gz at revision " + commitA + " of dataset repo allenai/c4 (HTTP 404)"},
		{name: "wrong LFS hash", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Faults: hubtest.Faults{WrongHash: true}},
			wantErr: hub.ErrHashMismatch, wantMsg: "the hub's etag says"},
		{name: "pinned sha256 mismatch on a regular file", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "config.json", Content: data}, req: hub.Request{SHA256: sha([]byte("other"))},
			wantErr: hub.ErrHashMismatch, wantMsg: "(pinned)"},
		{name: "pinned sha256 match verifies a regular file", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "config.json", Content: data}, req: hub.Request{SHA256: sha(data)}, verified: true},
		{name: "two 503s then success", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Faults: hubtest.Faults{Fail5xx: 2}}, verified: true,
			check: func(t *testing.T, srv *hubtest.Server) {
				hits := bytesHits(srv)
				require.Len(t, hits, 3)
				assert.Equal(t, []int{503, 503, 200}, []int{hits[0].Status, hits[1].Status, hits[2].Status})
			}},
		{name: "503 forever gives up", attempts: 3, file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Faults: hubtest.Faults{Fail5xx: 100}},
			wantMsg: "gave up after 3 attempts, nothing received"},
		{name: "truncated body resumes with Range", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Faults: hubtest.Faults{TruncateAt: 1200, TruncateTimes: 2}}, verified: true,
			check: func(t *testing.T, srv *hubtest.Server) {
				hits := bytesHits(srv)
				require.Len(t, hits, 3)
				assert.Equal(t, []string{"", "bytes=1200-", "bytes=2400-"}, []string{hits[0].Range, hits[1].Range, hits[2].Range})
				assert.Equal(t, 206, hits[2].Status)
			}},
		{name: "truncated every time gives up, keeping the part", attempts: 2, file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Faults: hubtest.Faults{TruncateAt: 100}},
			wantErr: hub.ErrTruncated, wantMsg: "body ended early", partKept: true},
		{name: "Range ignored: 200 means start over", file: hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true, Faults: hubtest.Faults{TruncateAt: 1000, TruncateTimes: 1, IgnoreRange: true}}, verified: true,
			check: func(t *testing.T, srv *hubtest.Server) {
				hits := bytesHits(srv)
				require.Len(t, hits, 2)
				assert.Equal(t, "bytes=1000-", hits[1].Range)
				assert.Equal(t, 200, hits[1].Status)
			}},
		{name: "dataset on a named ref with slashes", file: hubtest.File{Dataset: true, Repo: "bookcorpus/bookcorpus", Revision: "refs/convert/parquet", Path: "plain_text/train/0000.parquet", Content: data, LFS: true}, verified: true,
			check: func(t *testing.T, srv *hubtest.Server) {
				assert.Equal(t, "/datasets/bookcorpus/bookcorpus/resolve/refs%2Fconvert%2Fparquet/plain_text/train/0000.parquet", srv.Hits()[0].Path)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := hubtest.New()
			defer srv.Close()
			srv.Add(c.file)
			cl := newClient(t, srv, func(o *hub.Options) {
				o.Token = c.token
				if c.attempts > 0 {
					o.MaxAttempts = c.attempts
				}
			})
			req := hub.Request{Type: hub.Model, Repo: c.file.Repo, Revision: c.file.Revision, File: c.file.Path, SHA256: c.req.SHA256}
			if c.file.Dataset {
				req.Type = hub.Dataset
			}
			if c.req.Repo != "" {
				req.Repo = c.req.Repo
			}
			if c.req.Revision != "" {
				req.Revision = c.req.Revision
			}
			if c.req.File != "" {
				req.File = c.req.File
			}
			dest := filepath.Join(t.TempDir(), "out", "file")
			d, err := cl.Download(context.Background(), req, dest)
			if c.wantErr != nil || c.wantMsg != "" {
				require.Error(t, err)
				if c.wantErr != nil {
					assert.ErrorIs(t, err, c.wantErr)
				}
				assert.Contains(t, err.Error(), c.wantMsg)
				if c.token != "" {
					assert.NotContains(t, err.Error(), c.token)
				}
				requireNoArtifacts(t, dest, c.partKept)
			} else {
				require.NoError(t, err)
				got, err := os.ReadFile(dest)
				require.NoError(t, err)
				assert.Equal(t, data, got)
				assert.Equal(t, hub.Download{Path: dest, Size: int64(len(data)), SHA256: sha(data), Verified: c.verified,
					Commit: hubtest.Commit(c.file.Dataset, c.file.Repo, c.file.Revision)}, d)
				assert.NoFileExists(t, dest+".part")
				assert.NoFileExists(t, dest+".lock")
			}
			if c.check != nil {
				c.check(t, srv)
			}
		})
	}
}

// setup publishes one LFS file and returns a client and its request.
func setup(t *testing.T, data []byte, faults hubtest.Faults) (*hubtest.Server, *hub.Client, hub.Request) {
	t.Helper()
	srv := hubtest.New()
	t.Cleanup(srv.Close)
	srv.Add(hubtest.File{Dataset: true, Repo: "allenai/c4", Revision: commitA, Path: "en/c4-train.00000-of-01024.json.gz", Content: data, LFS: true, Faults: faults})
	return srv, newClient(t, srv, nil), hub.Request{Type: hub.Dataset, Repo: "allenai/c4", Revision: commitA, File: "en/c4-train.00000-of-01024.json.gz"}
}

func TestResumeFromKeptPart(t *testing.T) {
	data := content(4096)
	cases := []struct {
		name       string
		part       []byte
		wantRanges []string
		wantStatus []int
	}{
		{"prefix appended with 206", data[:1000], []string{"bytes=1000-"}, []int{206}},
		{"complete part: 416, verified as is", data, []string{"bytes=4096-"}, []int{416}},
		{"part longer than the file: 416, start over", append(append([]byte{}, data...), 'x'), []string{"bytes=4097-", ""}, []int{416, 200}},
		{"stale prefix from another upload: hash fails, start over once", bytes.Repeat([]byte("z"), 1000), []string{"bytes=1000-", ""}, []int{206, 200}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, cl, req := setup(t, data, hubtest.Faults{})
			dest := filepath.Join(t.TempDir(), "c4.json.gz")
			require.NoError(t, os.WriteFile(dest+".part", c.part, 0o644))
			d, err := cl.Download(context.Background(), req, dest)
			require.NoError(t, err)
			assert.True(t, d.Verified)
			assert.Equal(t, sha(data), d.SHA256)
			got, err := os.ReadFile(dest)
			require.NoError(t, err)
			assert.Equal(t, data, got)
			var ranges []string
			var statuses []int
			for _, h := range bytesHits(srv) {
				ranges = append(ranges, h.Range)
				statuses = append(statuses, h.Status)
			}
			assert.Equal(t, c.wantRanges, ranges)
			assert.Equal(t, c.wantStatus, statuses)
		})
	}
}

func TestContextCancelKeepsPartForResume(t *testing.T) {
	data := content(64 << 10)
	srv, cl, req := setup(t, data, hubtest.Faults{StallAfter: 10000})
	dest := filepath.Join(t.TempDir(), "c4.json.gz")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cl.Download(ctx, req, dest)
		errc <- err
	}()
	require.Eventually(t, func() bool {
		fi, err := os.Stat(dest + ".part")
		return err == nil && fi.Size() == 10000
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	err := <-errc
	require.ErrorIs(t, err, context.Canceled)
	assert.NoFileExists(t, dest)
	assert.FileExists(t, dest+".part")

	srv.SetFaults(true, req.Repo, req.Revision, req.File, hubtest.Faults{})
	d, err := cl.Download(context.Background(), req, dest)
	require.NoError(t, err)
	assert.True(t, d.Verified)
	hits := bytesHits(srv)
	assert.Equal(t, "bytes=10000-", hits[len(hits)-1].Range)
}

func TestCancelWhileWaitingForBackoff(t *testing.T) {
	srv, _, req := setup(t, content(100), hubtest.Faults{Fail5xx: 100})
	cl := newClient(t, srv, func(o *hub.Options) { o.Backoff = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	dest := filepath.Join(t.TempDir(), "f")
	_, err := cl.Download(ctx, req, dest)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NoFileExists(t, dest)
}

func TestConcurrentDownloadsOfOneDestination(t *testing.T) {
	data := content(200 << 10)
	srv, cl, req := setup(t, data, hubtest.Faults{})
	dest := filepath.Join(t.TempDir(), "c4.json.gz")
	const n = 4
	results := make([]hub.Download, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = cl.Download(context.Background(), req, dest)
		}()
	}
	wg.Wait()
	reused := 0
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, sha(data), results[i].SHA256)
		assert.Equal(t, commitA, results[i].Commit)
		if results[i].Reused {
			reused++
		}
	}
	assert.Equal(t, n-1, reused, "one goroutine downloads, the others reuse")
	assert.Len(t, bytesHits(srv), 1, "the bytes were fetched once")
	assert.NoFileExists(t, dest+".lock")
}

func TestReuseWithStalePinnedHashRefetches(t *testing.T) {
	data := content(300)
	srv, cl, req := setup(t, data, hubtest.Faults{})
	dest := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(dest, []byte("old content"), 0o644))
	req.SHA256 = sha(data)
	d, err := cl.Download(context.Background(), req, dest)
	require.NoError(t, err)
	assert.False(t, d.Reused)
	assert.Len(t, bytesHits(srv), 1)

	d, err = cl.Download(context.Background(), req, dest)
	require.NoError(t, err)
	assert.True(t, d.Reused)
	assert.True(t, d.Verified)
	assert.Len(t, bytesHits(srv), 1, "a reuse makes no request")
}

func TestDestinationIsADirectory(t *testing.T) {
	_, cl, req := setup(t, content(10), hubtest.Faults{})
	dest := t.TempDir()
	_, err := cl.Download(context.Background(), req, dest)
	require.ErrorContains(t, err, "not a regular file")
}

func TestProgress(t *testing.T) {
	data := content(100 << 10)
	srv := hubtest.New()
	defer srv.Close()
	srv.Add(hubtest.File{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, Path: "tokenizer.json", Content: data, LFS: true})
	req := hub.Request{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, File: "tokenizer.json"}

	t.Run("drawn on a writer", func(t *testing.T) {
		var buf bytes.Buffer
		cl := newClient(t, srv, func(o *hub.Options) { o.Progress = &buf })
		_, err := cl.Download(context.Background(), req, filepath.Join(t.TempDir(), "t.json"))
		require.NoError(t, err)
		cl.Close()
		assert.Contains(t, buf.String(), "tokenizer.json")
		assert.Contains(t, buf.String(), "100.0 KiB / 100.0 KiB")
	})
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("silent on a non-terminal file or when quiet, quiet=%v", quiet), func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			require.NoError(t, err)
			defer f.Close()
			assert.False(t, term.IsTerminal(int(f.Fd())))
			var buf bytes.Buffer
			cl := newClient(t, srv, func(o *hub.Options) {
				o.Progress = f
				if quiet {
					o.Progress = &buf // drawn if asked, but Quiet wins
				}
				o.Quiet = quiet
			})
			_, err = cl.Download(context.Background(), req, filepath.Join(t.TempDir(), "t.json"))
			require.NoError(t, err)
			cl.Close()
			fi, err := f.Stat()
			require.NoError(t, err)
			assert.Zero(t, fi.Size())
			assert.Zero(t, buf.Len())
		})
	}
}

func TestURL(t *testing.T) {
	cases := []struct {
		endpoint string
		req      hub.Request
		want     string
		wantErr  string
	}{
		{"", hub.Request{Repo: "Qwen/Qwen2.5-7B", Revision: commitA, File: "tokenizer.json"}, "https://huggingface.co/Qwen/Qwen2.5-7B/resolve/" + commitA + "/tokenizer.json", ""},
		{"https://hf-mirror.com/", hub.Request{Type: hub.Dataset, Repo: "allenai/c4", Revision: "main", File: "en/c4-train.00000-of-01024.json.gz"}, "https://hf-mirror.com/datasets/allenai/c4/resolve/main/en/c4-train.00000-of-01024.json.gz", ""},
		{"http://127.0.0.1:9/hf", hub.Request{Type: hub.Dataset, Repo: "bookcorpus/bookcorpus", Revision: "refs/convert/parquet", File: "plain_text/train/0000.parquet"}, "http://127.0.0.1:9/hf/datasets/bookcorpus/bookcorpus/resolve/refs%2Fconvert%2Fparquet/plain_text/train/0000.parquet", ""},
		{"", hub.Request{Repo: "gpt2", Revision: "main", File: "a b#c?.json"}, "https://huggingface.co/gpt2/resolve/main/a%20b%23c%3F.json", ""},
		{"", hub.Request{Repo: "a/b", Revision: "main", File: "../x"}, "", `segment ".." is not allowed`},
		{"", hub.Request{Repo: "a/b/c", Revision: "main", File: "x"}, "", `must look like "owner/name"`},
		{"", hub.Request{Repo: "a/b", File: "x"}, "", "empty revision"},
		{"", hub.Request{Repo: "a/b", Revision: "main", File: "/x"}, "", "relative path"},
		{"", hub.Request{Type: "space", Repo: "a/b", Revision: "main", File: "x"}, "", "unknown repo type"},
		{"", hub.Request{Repo: "a/b", Revision: "main", File: "x", SHA256: "ABC"}, "", "64 lowercase hex"},
	}
	for _, c := range cases {
		t.Run(c.want+c.wantErr, func(t *testing.T) {
			cl, err := hub.New(hub.Options{Endpoint: c.endpoint})
			require.NoError(t, err)
			got, err := cl.URL(c.req)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []hub.Options{
		{Endpoint: "ftp://example.org"},
		{Endpoint: "huggingface.co"},
		{Endpoint: "https://user:secret@example.org"},
		{Token: "hf_abc\n"},
	} {
		_, err := hub.New(o)
		require.Error(t, err, "%+v", o)
		assert.NotContains(t, err.Error(), "secret")
		assert.NotContains(t, err.Error(), "hf_abc")
	}
}

func TestOptionsFromEnv(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "https://mirror.example/")
	t.Setenv("HF_TOKEN", "hf_from_env")
	o := hub.OptionsFromEnv()
	assert.Equal(t, "https://mirror.example/", o.Endpoint)
	assert.Equal(t, "hf_from_env", o.Token)
	cl, err := hub.New(o)
	require.NoError(t, err)
	assert.Equal(t, "https://mirror.example", cl.Endpoint())
}

func TestErrorsNeverCarryTheToken(t *testing.T) {
	srv := hubtest.New()
	defer srv.Close()
	const secret = "hf_very_secret_token_value"
	cl := newClient(t, srv, func(o *hub.Options) { o.Token = secret })
	for _, req := range []hub.Request{
		{Repo: "missing/repo", Revision: "main", File: "x"},
		{Repo: "a/b", Revision: "main", File: "x"},
	} {
		_, err := cl.Download(context.Background(), req, filepath.Join(t.TempDir(), "x"))
		require.Error(t, err)
		assert.False(t, strings.Contains(err.Error(), secret))
	}
	// A dead endpoint: the transport's error names the URL, which holds no secret.
	dead, err := hub.New(hub.Options{Endpoint: "http://127.0.0.1:1", Token: secret, MaxAttempts: 2, Backoff: time.Millisecond})
	require.NoError(t, err)
	_, err = dead.Download(context.Background(), hub.Request{Repo: "a/b", Revision: "main", File: "x"}, filepath.Join(t.TempDir(), "x"))
	require.ErrorContains(t, err, "gave up after 2 attempts")
	assert.NotContains(t, err.Error(), secret)
	assert.True(t, !errors.Is(err, hub.ErrNotFound))
}

// A hub that is never reached (offline, a name that does not resolve, a
// refused connection) or that sends no byte leaves no file behind: no
// 0-byte .part that looks like a download in progress.
func TestFailureBeforeAnyByteLeavesNoPart(t *testing.T) {
	srv, _, req := setup(t, content(100), hubtest.Faults{Fail5xx: 100})
	down := hubtest.New()
	downURL := down.URL()
	down.Close() // a port nobody listens on
	for _, tc := range []struct {
		name     string
		endpoint string
		want     string
	}{
		{"refused connection", downURL, "nothing received"},
		{"name that does not resolve", "http://rival-no-such-host.invalid", "nothing received"},
		{"server errors only", srv.URL(), "nothing received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := hub.New(hub.Options{Endpoint: tc.endpoint, MaxAttempts: 2, Backoff: time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(cl.Close)
			dest := filepath.Join(t.TempDir(), "shard.json.gz")
			_, err = cl.Download(context.Background(), req, dest)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			requireNoArtifacts(t, dest, false)
		})
	}
}
