package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rivalbench/rival/safefile"
)

// Sentinel errors, for errors.Is; the wrapping error says which repo, revision and file.
var (
	ErrNeedsToken   = errors.New("the hub refused access")
	ErrNotFound     = errors.New("not found on the hub")
	ErrHashMismatch = errors.New("sha256 mismatch")
	ErrTruncated    = errors.New("body ended early")
)

// Download describes a file that is complete at Path.
type Download struct {
	Path   string
	Size   int64
	SHA256 string // lowercase hex, computed over the bytes written
	// Verified is true when the sha256 matched the hub's LFS etag or the request's SHA256.
	Verified bool
	Commit   string // X-Repo-Commit: the commit the revision resolved to ("" when unknown)
	Reused   bool   // the file was already at Path (another process or goroutine fetched it)
}

// meta is what the hub said about the file, gathered over the redirect chain.
type meta struct {
	etag   string // unquoted, without W/
	sha256 string // etag when it is a sha256 (LFS files)
	size   int64  // full file size, -1 when unknown
	commit string
}

// retryable marks failures that another attempt may fix (5xx, 429, broken connections).
type retryable struct {
	err   error
	after time.Duration // the server's Retry-After, if any
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// Download fetches req into destPath. Bytes land in destPath+".part" first, which a later call
// resumes with a Range request; the file is verified, fsynced and renamed into place, so destPath
// exists only when complete. Concurrent calls for one destPath (goroutines or processes) serialise
// on destPath+".lock"; the later ones find the file and reuse it. A failure keeps a .part only
// when it holds bytes to resume from: a hub that was never reached (offline, DNS) or sent
// nothing leaves no file behind.
func (c *Client) Download(ctx context.Context, req Request, destPath string) (_ Download, err error) {
	rawURL, err := c.URL(req)
	if err != nil {
		return Download{}, err
	}
	if destPath == "" {
		return Download{}, fmt.Errorf("download %s: empty destination path", req)
	}
	if err := os.MkdirAll(filepath.Dir(destPath), 0o755); err != nil {
		return Download{}, fmt.Errorf("download %s: %w", req, err)
	}
	unlock, err := lockFile(ctx, destPath+".lock")
	if err != nil {
		return Download{}, fmt.Errorf("download %s: %w", req, err)
	}
	defer unlock()

	if d, ok, err := reuse(req, destPath); err != nil || ok {
		return d, err
	}

	part := destPath + ".part"
	defer func() {
		if err != nil && fileSize(part) == 0 {
			_ = os.Remove(part)
		}
	}()
	bar := c.newBar(filepath.Base(req.File))
	defer bar.finish()
	restarted := false
	var lastErr error
	for attempt := 1; attempt <= c.maxAttempts; attempt++ {
		if attempt > 1 {
			if err := c.sleep(ctx, attempt, lastErr); err != nil {
				return Download{}, fmt.Errorf("download %s: %w", req, err)
			}
		}
		m, sum, resumed, err := c.fetchOnce(ctx, req, rawURL, part, bar)
		if err == nil {
			err = checkHash(req, m, sum)
			if err != nil && resumed && !restarted {
				// The kept prefix may be from an older upload of a moving ref: start over once.
				restarted = true
				_ = os.Remove(part)
				lastErr = err
				attempt--
				continue
			}
		}
		if err == nil {
			d := Download{Path: destPath, Size: fileSize(part), SHA256: sum, Verified: m.sha256 != "" || req.SHA256 != "", Commit: m.commit}
			if err := os.Rename(part, destPath); err != nil {
				return Download{}, fmt.Errorf("download %s: %w", req, err)
			}
			if err := syncDir(filepath.Dir(destPath)); err != nil {
				return Download{}, fmt.Errorf("download %s: %w", req, err)
			}
			bar.done()
			return d, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			// Keep the .part: the next call resumes it.
			return Download{}, fmt.Errorf("download %s: %w", req, ctxErr)
		}
		var r *retryable
		if !errors.As(err, &r) {
			if errors.Is(err, ErrHashMismatch) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrNeedsToken) {
				_ = os.Remove(part)
			}
			return Download{}, err
		}
		lastErr = err
	}
	if fileSize(part) > 0 {
		return Download{}, fmt.Errorf("download %s: gave up after %d attempts (the partial file %s is kept for the next try): %w",
			req, c.maxAttempts, part, lastErr)
	}
	return Download{}, fmt.Errorf("download %s: gave up after %d attempts, nothing received: %w", req, c.maxAttempts, lastErr)
}

// sleep waits before attempt n: exponential backoff, or the server's Retry-After when it asks
// for longer (bounded to a minute).
func (c *Client) sleep(ctx context.Context, attempt int, last error) error {
	d := c.backoff << min(attempt-2, 4)
	var r *retryable
	if errors.As(last, &r) && r.after > d {
		d = min(r.after, time.Minute)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func checkHash(req Request, m meta, sum string) error {
	if m.sha256 != "" && m.sha256 != sum {
		return fmt.Errorf("download %s: %w: the hub's etag says %s, the bytes hash to %s (the partial file was removed; run again)",
			req, ErrHashMismatch, m.sha256, sum)
	}
	if req.SHA256 != "" && req.SHA256 != sum {
		return fmt.Errorf("download %s: %w: expected %s (pinned), the bytes hash to %s (the partial file was removed; if the pin is stale, update it)",
			req, ErrHashMismatch, req.SHA256, sum)
	}
	return nil
}

// reuse reports a complete file already at destPath (written by an earlier or concurrent call).
func reuse(req Request, destPath string) (Download, bool, error) {
	fi, err := os.Stat(destPath)
	if errors.Is(err, os.ErrNotExist) {
		return Download{}, false, nil
	}
	if err != nil {
		return Download{}, false, fmt.Errorf("download %s: %w", req, err)
	}
	if !fi.Mode().IsRegular() {
		return Download{}, false, fmt.Errorf("download %s: %s exists and is not a regular file", req, destPath)
	}
	sum, err := hashFile(destPath)
	if err != nil {
		return Download{}, false, fmt.Errorf("download %s: %w", req, err)
	}
	if req.SHA256 != "" && sum != req.SHA256 {
		// Stale or foreign content under our name: fetch it again.
		if err := os.Remove(destPath); err != nil {
			return Download{}, false, fmt.Errorf("download %s: %w", req, err)
		}
		return Download{}, false, nil
	}
	d := Download{Path: destPath, Size: fi.Size(), SHA256: sum, Verified: req.SHA256 != "", Reused: true}
	if isCommitSHA(req.Revision) {
		d.Commit = req.Revision
	}
	return d, true, nil
}

// fetchOnce makes one request and appends or rewrites the .part file. It returns the hub's
// metadata, the sha256 of the whole .part, and whether it started from a kept prefix.
func (c *Client) fetchOnce(ctx context.Context, req Request, rawURL, part string, bar *bar) (m meta, sum string, resumed bool, err error) {
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return meta{}, "", false, fmt.Errorf("download %s: %w", req, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("download %s: close %s: %w", req, part, cerr)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return meta{}, "", false, fmt.Errorf("download %s: %w", req, err)
	}
	offset := fi.Size()

	resp, m, err := c.get(ctx, req, rawURL, offset)
	if err != nil {
		return meta{}, "", false, err
	}
	defer resp.Body.Close()

	switch resp.StatusCode {
	case http.StatusOK:
		if offset > 0 {
			// The server ignored our Range: the body is the whole file, start over from zero.
			offset = 0
		}
		if m.size < 0 && resp.ContentLength >= 0 {
			m.size = resp.ContentLength
		}
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset {
			_ = f.Truncate(0)
			return m, "", false, &retryable{err: fmt.Errorf("download %s: asked for bytes from %d, got Content-Range %q; starting over",
				req, offset, resp.Header.Get("Content-Range"))}
		}
		if m.size < 0 {
			m.size = total
		}
	case http.StatusRequestedRangeNotSatisfiable:
		_, total, _ := parseContentRange(resp.Header.Get("Content-Range"))
		if m.size < 0 {
			m.size = total
		}
		if offset > 0 && m.size == offset {
			// The .part already holds every byte: only verification is left.
			sum, err := hashFile(part)
			if err != nil {
				return m, "", true, fmt.Errorf("download %s: %w", req, err)
			}
			return m, sum, true, f.Sync()
		}
		_ = f.Truncate(0)
		return m, "", false, &retryable{err: fmt.Errorf("download %s: the partial file (%d bytes) is longer than the file on the hub (%d bytes); starting over",
			req, offset, m.size)}
	default:
		return m, "", false, statusError(req, resp, c.token != "")
	}

	if err := f.Truncate(offset); err != nil {
		return m, "", false, fmt.Errorf("download %s: %w", req, err)
	}
	h := sha256.New()
	if offset > 0 {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, offset)); err != nil {
			return m, "", false, fmt.Errorf("download %s: reread %s: %w", req, part, err)
		}
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return m, "", false, fmt.Errorf("download %s: %w", req, err)
	}
	bar.start(m.size, offset)
	n, copyErr := io.Copy(io.MultiWriter(f, h, bar), resp.Body)
	got := offset + n
	if copyErr != nil {
		if ctx.Err() != nil {
			return m, "", offset > 0, ctx.Err()
		}
		if isWriteErr(copyErr) {
			return m, "", offset > 0, fmt.Errorf("download %s: write %s: %w", req, part, copyErr)
		}
		return m, "", offset > 0, &retryable{err: fmt.Errorf("download %s: %w after %d of %s bytes: %v", req, ErrTruncated, got, sizeString(m.size), copyErr)}
	}
	if m.size >= 0 && got < m.size {
		return m, "", offset > 0, &retryable{err: fmt.Errorf("download %s: %w: got %d of %d bytes", req, ErrTruncated, got, m.size)}
	}
	if m.size >= 0 && got > m.size {
		_ = f.Truncate(0)
		return m, "", false, &retryable{err: fmt.Errorf("download %s: got %d bytes, the hub announced %d; starting over", req, got, m.size)}
	}
	if err := f.Sync(); err != nil {
		return m, "", offset > 0, fmt.Errorf("download %s: fsync %s: %w", req, part, err)
	}
	return m, hex.EncodeToString(h.Sum(nil)), offset > 0, nil
}

// get sends GET, following up to 10 redirects by hand so the hub's own headers (X-Linked-Etag,
// X-Linked-Size, X-Repo-Commit on its 302 to the CDN) are kept, and so the token goes to the
// endpoint's host only: a CDN on another host gets no Authorization header.
func (c *Client) get(ctx context.Context, req Request, rawURL string, offset int64) (*http.Response, meta, error) {
	m := meta{size: -1}
	target := rawURL
	for hop := 0; ; hop++ {
		if hop > 10 {
			return nil, m, fmt.Errorf("download %s: more than 10 redirects", req)
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, m, fmt.Errorf("download %s: %w", req, err)
		}
		// identity: never let the transport gunzip behind our back (lengths, ranges and hashes
		// are about the stored bytes).
		hr.Header.Set("Accept-Encoding", "identity")
		hr.Header.Set("User-Agent", "rival-hub/1")
		if offset > 0 {
			hr.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
		}
		if c.token != "" && sameOrigin(hr.URL, c.endpoint) {
			hr.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.http.Do(hr)
		if err != nil {
			if ctx.Err() != nil {
				return nil, m, ctx.Err()
			}
			// url.Error carries the URL, which holds no secret (the token is a header).
			return nil, m, &retryable{err: fmt.Errorf("download %s: %w", req, err)}
		}
		m.absorb(resp.Header)
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			loc := resp.Header.Get("Location")
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if loc == "" {
				return nil, m, fmt.Errorf("download %s: redirect %d without a Location", req, resp.StatusCode)
			}
			next, err := hr.URL.Parse(loc)
			if err != nil {
				return nil, m, fmt.Errorf("download %s: bad redirect location: %w", req, err)
			}
			target = next.String()
			continue
		}
		return resp, m, nil
	}
}

// absorb keeps the first value seen of each header along the redirect chain: the hub's 302
// speaks about the file, the CDN's reply about its own object.
func (m *meta) absorb(h http.Header) {
	if m.commit == "" {
		m.commit = h.Get("X-Repo-Commit")
	}
	if m.etag == "" {
		if e := h.Get("X-Linked-Etag"); e != "" {
			m.etag = unquoteETag(e)
		} else if e := h.Get("ETag"); e != "" {
			m.etag = unquoteETag(e)
		}
		if isSHA256(m.etag) {
			m.sha256 = m.etag
		}
	}
	if m.size < 0 {
		if s := h.Get("X-Linked-Size"); s != "" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
				m.size = n
			}
		}
	}
}

func unquoteETag(e string) string {
	e = strings.TrimSpace(e)
	e = strings.TrimPrefix(e, "W/")
	return strings.ToLower(strings.Trim(e, `"`))
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// statusError turns a refusal into an error that says what to do. The hub names the cause in
// X-Error-Code (GatedRepo, RepoNotFound, RevisionNotFound, EntryNotFound); it answers 401 for
// unknown repos when no token is sent, so the code wins over the status.
func statusError(req Request, resp *http.Response, sentToken bool) error {
	code := resp.Header.Get("X-Error-Code")
	kind := "model"
	if req.Type == Dataset {
		kind = "dataset"
	}
	switch {
	case code == "RepoNotFound":
		return fmt.Errorf("download %s: %w: %s repo %s does not exist or is private (HTTP %d); check the name, and HF_TOKEN for private repos",
			req, ErrNotFound, kind, req.Repo, resp.StatusCode)
	case code == "RevisionNotFound":
		return fmt.Errorf("download %s: %w: revision %s does not exist in %s repo %s (HTTP %d); check the pinned revision",
			req, ErrNotFound, req.Revision, kind, req.Repo, resp.StatusCode)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		if sentToken {
			return fmt.Errorf("download %s: %w (HTTP %d): the HF_TOKEN in use has no access to %s: accept its licence on the hub with the token's account, or renew the token in secrets.env",
				req, ErrNeedsToken, resp.StatusCode, req.Repo)
		}
		return fmt.Errorf("download %s: %w (HTTP %d): needs HF_TOKEN: the repo %s is gated, accept its licence on the hub and put HF_TOKEN=... in secrets.env",
			req, ErrNeedsToken, resp.StatusCode, req.Repo)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("download %s: %w: file %s at revision %s of %s repo %s (HTTP 404); check the file name and revision",
			req, ErrNotFound, req.File, req.Revision, kind, req.Repo)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return &retryable{
			err:   fmt.Errorf("download %s: the hub answered HTTP %d", req, resp.StatusCode),
			after: retryAfter(resp.Header.Get("Retry-After")),
		}
	default:
		return fmt.Errorf("download %s: unexpected HTTP %d from %s", req, resp.StatusCode, resp.Request.URL.Host)
	}
}

func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// parseContentRange reads "bytes START-END/TOTAL" or "bytes */TOTAL"; total is -1 for "*".
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, -1, false
	}
	span, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, -1, false
	}
	total = -1
	if tot != "*" {
		n, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || n < 0 {
			return 0, -1, false
		}
		total = n
	}
	if span == "*" {
		return 0, total, true
	}
	s, _, found := strings.Cut(span, "-")
	if !found {
		return 0, total, false
	}
	start, err := strconv.ParseInt(s, 10, 64)
	if err != nil || start < 0 {
		return 0, total, false
	}
	return start, total, true
}

func isWriteErr(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) || errors.Is(err, syscall.ENOSPC)
}

func sizeString(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return strconv.FormatInt(n, 10)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func hashFile(path string) (string, error) {
	f, _, err := safefile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
