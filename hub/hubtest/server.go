package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token is the only bearer token the server accepts for gated repos.
const Token = "hf_hubtest_0123456789abcdef"

// File is one file of one repository at one revision.
type File struct {
	Dataset  bool // a dataset repo (URLs under /datasets/); a model repo otherwise
	Repo     string
	Revision string // a commit SHA or a ref name; the same string the client puts in the URL
	Path     string
	Content  []byte
	LFS      bool // served through a 302 to the CDN host, with the sha256 as X-Linked-Etag
	Gated    bool // 401 without Token, 403 with another token
	Faults   Faults
}

// Faults misbehave on purpose. Counts apply to requests that reach the file's bytes (the CDN for
// LFS files, the hub itself otherwise).
type Faults struct {
	Fail5xx       int           // the first N requests answer 503
	TruncateAt    int64         // when > 0, a body stops after this many bytes and the connection drops
	TruncateTimes int           // how many bodies are truncated (0: every one)
	IgnoreRange   bool          // answer Range requests with 200 and the whole file
	WrongHash     bool          // advertise a sha256 (X-Linked-Etag) that is not the content's
	StallAfter    int64         // when > 0, send this many bytes, then wait until the client goes away
	Delay         time.Duration // wait this long before answering with the bytes
}

// Hit records one request, for assertions.
type Hit struct {
	Host   string // "hub" or "cdn"
	Path   string // escaped path
	Range  string
	Auth   bool // an Authorization header was present
	Status int
}

// Server is the fake hub plus its CDN.
type Server struct {
	hub, cdn *httptest.Server

	mu    sync.Mutex
	files map[string]*entry // by key()
	blobs map[string]*entry // LFS files by sha256
	repos map[string]bool   // "dataset:owner/name"
	revs  map[string]bool   // "dataset:owner/name@rev"
	hits  []Hit
}

type entry struct {
	File
	sha256    string
	served    int // requests that reached the bytes
	truncated int
}

// New starts both hosts on loopback. Close stops them.
func New() *Server {
	s := &Server{
		files: map[string]*entry{},
		blobs: map[string]*entry{},
		repos: map[string]bool{},
		revs:  map[string]bool{},
	}
	s.hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.cdn = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	return s
}

// URL is the hub's base URL (what HF_ENDPOINT would hold).
func (s *Server) URL() string { return s.hub.URL }

// CDNURL is the base URL of the second host that LFS redirects point to.
func (s *Server) CDNURL() string { return s.cdn.URL }

// Close stops both hosts.
func (s *Server) Close() {
	s.hub.Close()
	s.cdn.Close()
}

// Add publishes a file (replacing one with the same repo, revision and path).
func (s *Server) Add(f File) {
	sum := sha256.Sum256(f.Content)
	e := &entry{File: f, sha256: hex.EncodeToString(sum[:])}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[key(f.Dataset, f.Repo, f.Revision, f.Path)] = e
	s.repos[repoKey(f.Dataset, f.Repo)] = true
	s.revs[repoKey(f.Dataset, f.Repo)+"@"+f.Revision] = true
	if f.LFS {
		s.blobs[e.sha256] = e
	}
}

// SetFaults replaces the faults of a published file and resets its request counters.
func (s *Server) SetFaults(dataset bool, repo, revision, path string, f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.files[key(dataset, repo, revision, path)]; e != nil {
		e.Faults = f
		e.served, e.truncated = 0, 0
	}
}

// Hits returns every request seen so far, in order.
func (s *Server) Hits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Hit(nil), s.hits...)
}

// Commit is the X-Repo-Commit the server reports for a revision: the revision itself when it is
// a 40-hex SHA, else a stable SHA derived from the ref name.
func Commit(dataset bool, repo, revision string) string {
	if len(revision) == 40 && strings.Trim(revision, "0123456789abcdef") == "" {
		return revision
	}
	sum := sha1.Sum([]byte(repoKey(dataset, repo) + "@" + revision))
	return hex.EncodeToString(sum[:])
}

func key(dataset bool, repo, rev, path string) string {
	return repoKey(dataset, repo) + "@" + rev + ":" + path
}

func repoKey(dataset bool, repo string) string {
	if dataset {
		return "dataset:" + repo
	}
	return "model:" + repo
}

// statusRecorder notes a response's status in the hit log as soon as the header is written,
// before any byte of the body reaches the client, so a test that looks at the log after its
// request returned always sees the status.
type statusRecorder struct {
	http.ResponseWriter
	srv    *Server
	hit    int
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.srv.mu.Lock()
		r.srv.hits[r.hit].Status = code
		r.srv.mu.Unlock()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(p)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// record notes a request when it arrives, so the log is in arrival order (a stalled request
// stays before the ones that came after it), and returns the writer that fills in its status.
func (s *Server) record(host string, w http.ResponseWriter, r *http.Request) *statusRecorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits = append(s.hits, Hit{
		Host: host, Path: r.URL.EscapedPath(), Range: r.Header.Get("Range"),
		Auth: r.Header.Get("Authorization") != "",
	})
	return &statusRecorder{ResponseWriter: w, srv: s, hit: len(s.hits) - 1}
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	rec := s.record("hub", w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(rec, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	dataset, repo, rev, path, ok := parseResolve(r.URL.EscapedPath())
	if !ok {
		http.NotFound(rec, r)
		return
	}
	auth := r.Header.Get("Authorization")
	kind := "model"
	if dataset {
		kind = "dataset"
	}
	s.mu.Lock()
	knownRepo := s.repos[repoKey(dataset, repo)]
	knownRev := s.revs[repoKey(dataset, repo)+"@"+rev]
	e := s.files[key(dataset, repo, rev, path)]
	gated := false
	for k, f := range s.files {
		if strings.HasPrefix(k, repoKey(dataset, repo)+"@") && f.Gated {
			gated = true
		}
	}
	s.mu.Unlock()

	switch {
	case !knownRepo && auth == "":
		// The hub does not reveal whether a private repo exists to anonymous callers.
		refuse(rec, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.String()+".")
	case !knownRepo:
		refuse(rec, http.StatusNotFound, "RepoNotFound", "Repository Not Found for url: "+r.URL.String()+".")
	case gated && auth == "":
		refuse(rec, http.StatusUnauthorized, "GatedRepo", fmt.Sprintf("Access to %s %s is restricted. You must have access to it and be authenticated to access it. Please log in.", kind, repo))
	case gated && auth != "Bearer "+Token:
		refuse(rec, http.StatusForbidden, "GatedRepo", fmt.Sprintf("Access to %s %s is restricted and you are not in the authorized list.", kind, repo))
	case !knownRev:
		refuse(rec, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
	case e == nil:
		refuse(rec, http.StatusNotFound, "EntryNotFound", fmt.Sprintf("%s does not exist on %q", path, rev))
	case e.LFS:
		linked := e.sha256
		if e.Faults.WrongHash {
			bad := sha256.Sum256(append([]byte("not the content:"), e.Content...))
			linked = hex.EncodeToString(bad[:])
		}
		h := rec.Header()
		h.Set("X-Repo-Commit", Commit(dataset, repo, rev))
		h.Set("X-Linked-Etag", `"`+linked+`"`)
		h.Set("X-Linked-Size", strconv.Itoa(len(e.Content)))
		h.Set("ETag", `"`+gitBlobSHA1([]byte(fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", e.sha256, len(e.Content))))+`"`)
		h.Set("Location", s.cdn.URL+"/repos/"+e.sha256[:2]+"/"+e.sha256+"?X-Amz-Signature="+e.sha256[:16]+"&response-content-disposition="+url.QueryEscape("inline; filename*=UTF-8''"+path))
		rec.WriteHeader(http.StatusFound)
		fmt.Fprintf(rec, "Found. Redirecting to %s", h.Get("Location"))
	default:
		h := rec.Header()
		h.Set("X-Repo-Commit", Commit(dataset, repo, rev))
		etag := gitBlobSHA1(e.Content)
		if e.Faults.WrongHash {
			// A non-LFS file's etag is a git sha1, which the client cannot check: the fault
			// then only matters to callers that pin a sha256.
			etag = gitBlobSHA1(append([]byte("x"), e.Content...))
		}
		h.Set("ETag", `"`+etag+`"`)
		s.serveBytes(rec, r, e)
	}
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	rec := s.record("cdn", w, r)
	if r.Header.Get("Authorization") != "" {
		// Presigned object-store URLs reject a second authentication mechanism.
		http.Error(rec, "<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>", http.StatusBadRequest)
		return
	}
	if r.URL.Query().Get("X-Amz-Signature") == "" {
		http.Error(rec, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
		return
	}
	sha := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	s.mu.Lock()
	e := s.blobs[sha]
	s.mu.Unlock()
	if e == nil {
		http.Error(rec, "<Error><Code>NoSuchKey</Code></Error>", http.StatusNotFound)
		return
	}
	rec.Header().Set("ETag", `"`+e.sha256+`"`)
	s.serveBytes(rec, r, e)
}

// serveBytes answers with the file's bytes, honouring Range and the file's faults.
func (s *Server) serveBytes(w *statusRecorder, r *http.Request, e *entry) {
	s.mu.Lock()
	e.served++
	faults := e.Faults
	fail := e.served <= faults.Fail5xx
	truncate := faults.TruncateAt > 0 && !fail && (faults.TruncateTimes == 0 || e.truncated < faults.TruncateTimes)
	if truncate {
		e.truncated++
	}
	s.mu.Unlock()

	if faults.Delay > 0 {
		select {
		case <-time.After(faults.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if fail {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "upstream temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	body := e.Content
	total := int64(len(body))
	h := w.Header()
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && !faults.IgnoreRange {
		start, end, ok := parseRange(rg, total)
		if !ok {
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", total))
			http.Error(w, "range not satisfiable", http.StatusRequestedRangeNotSatisfiable)
			return
		}
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, total))
		body = body[start : end+1]
		status = http.StatusPartialContent
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	switch {
	case faults.StallAfter > 0:
		n := min(faults.StallAfter, int64(len(body)))
		_, _ = w.Write(body[:n])
		w.Flush()
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	case truncate:
		n := min(faults.TruncateAt, int64(len(body)))
		_, _ = w.Write(body[:n])
		w.Flush()
		// Drop the connection with Content-Length unmet, as a reset mid-transfer does.
		panic(http.ErrAbortHandler)
	}
	_, _ = w.Write(body)
}

// parseRange accepts "bytes=N-" and "bytes=N-M" (all the hub clients send).
func parseRange(v string, total int64) (start, end int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 || start >= total {
		return 0, 0, false
	}
	end = total - 1
	if b != "" {
		e, err := strconv.ParseInt(b, 10, 64)
		if err != nil || e < start {
			return 0, 0, false
		}
		end = min(e, total-1)
	}
	return start, end, true
}

// parseResolve splits [/datasets]/{owner}/{name}/resolve/{rev}/{path...} (escaped segments).
func parseResolve(escaped string) (dataset bool, repo, rev, path string, ok bool) {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	if len(segs) > 0 && segs[0] == "datasets" {
		dataset = true
		segs = segs[1:]
	}
	i := -1
	for j, seg := range segs {
		if seg == "resolve" {
			i = j
			break
		}
	}
	if i < 1 || i > 2 || len(segs) < i+3 {
		return false, "", "", "", false
	}
	un := func(parts []string) (string, bool) {
		out := make([]string, len(parts))
		for k, p := range parts {
			u, err := url.PathUnescape(p)
			if err != nil || u == "" {
				return "", false
			}
			out[k] = u
		}
		return strings.Join(out, "/"), true
	}
	var ok1, ok2, ok3 bool
	repo, ok1 = un(segs[:i])
	rev, ok2 = un(segs[i+1 : i+2])
	path, ok3 = un(segs[i+2:])
	return dataset, repo, rev, path, ok1 && ok2 && ok3
}

// gitBlobSHA1 is git's object id for a blob: the hub's ETag for files stored in git (not LFS).
func gitBlobSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
