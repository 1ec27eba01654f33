package hub

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"golang.org/x/term"
)

// DefaultEndpoint is the public hub; HF_ENDPOINT overrides it (mirrors).
const DefaultEndpoint = "https://huggingface.co"

// RepoType says which URL family a repository lives under.
type RepoType string

const (
	// Model repositories resolve at {endpoint}/{repo}/resolve/...
	Model RepoType = "model"
	// Dataset repositories resolve at {endpoint}/datasets/{repo}/resolve/...
	Dataset RepoType = "dataset"
)

// Request names one file of one repository at one revision.
type Request struct {
	Type     RepoType // Model (the default when empty) or Dataset
	Repo     string   // "owner/name"
	Revision string   // a full commit SHA (preferred) or a branch/ref such as "refs/convert/parquet"
	File     string   // path inside the repository, "/"-separated
	// SHA256, when set, is the expected lowercase hex sha256 of the file; it is checked in addition
	// to the hub's own LFS etag, and it lets non-LFS files (whose etag is a git sha1) be verified.
	SHA256 string
}

func (r Request) String() string {
	kind := "model"
	if r.Type == Dataset {
		kind = "dataset"
	}
	return fmt.Sprintf("%s %s@%s:%s", kind, r.Repo, r.Revision, r.File)
}

func (r Request) validate() error {
	if r.Type != "" && r.Type != Model && r.Type != Dataset {
		return fmt.Errorf("hub request %s: unknown repo type %q (want %q or %q)", r, r.Type, Model, Dataset)
	}
	if r.Repo == "" || strings.HasPrefix(r.Repo, "/") || strings.HasSuffix(r.Repo, "/") || strings.Count(r.Repo, "/") > 1 {
		return fmt.Errorf("hub request %s: repo %q must look like \"owner/name\"", r, r.Repo)
	}
	if r.Revision == "" {
		return fmt.Errorf("hub request %s: empty revision: pin a commit SHA or name a branch", r)
	}
	if r.File == "" || strings.HasPrefix(r.File, "/") {
		return fmt.Errorf("hub request %s: file %q must be a relative path inside the repo", r, r.File)
	}
	for _, seg := range append(strings.Split(r.Repo, "/"), strings.Split(r.File, "/")...) {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("hub request %s: path segment %q is not allowed", r, seg)
		}
	}
	if r.SHA256 != "" && !isSHA256(r.SHA256) {
		return fmt.Errorf("hub request %s: expected SHA256 %q is not 64 lowercase hex digits", r, r.SHA256)
	}
	return nil
}

// Options configure a Client. Zero values mean: no token, default retries, no progress bars.
type Options struct {
	Endpoint string // base URL; empty means DefaultEndpoint
	Token    string // sent as "Authorization: Bearer ..." to the endpoint's host only
	// HTTPClient carries the transport; its CheckRedirect is ignored because the client follows
	// redirects itself (to read the hub's headers and to drop the token on cross-host hops).
	HTTPClient *http.Client
	// Progress receives progress bars. A *os.File that is not a terminal is treated as nil.
	Progress io.Writer
	Quiet    bool // no progress bars even when Progress is a terminal
	// MaxAttempts bounds tries per download for 5xx, 429 and broken connections (default 5).
	MaxAttempts int
	// Backoff is the first retry delay, doubled per attempt up to 16x (default 500ms).
	Backoff time.Duration
}

// OptionsFromEnv reads HF_ENDPOINT and HF_TOKEN and draws progress on stderr when it is a terminal.
func OptionsFromEnv() Options {
	o := Options{Endpoint: os.Getenv("HF_ENDPOINT"), Token: os.Getenv("HF_TOKEN")}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		o.Progress = os.Stderr
	}
	return o
}

// Client downloads from one hub endpoint. It is safe for concurrent use.
type Client struct {
	endpoint    *url.URL
	token       string
	http        *http.Client
	maxAttempts int
	backoff     time.Duration

	progressOut io.Writer
	progressMu  sync.Mutex
	progress    *mpb.Progress
}

// New checks the options and builds a Client.
func New(o Options) (*Client, error) {
	ep := strings.TrimRight(o.Endpoint, "/")
	if ep == "" {
		ep = DefaultEndpoint
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("hub endpoint %q (HF_ENDPOINT) must be an http(s) URL such as %s", o.Endpoint, DefaultEndpoint)
	}
	if u.User != nil {
		return nil, fmt.Errorf("hub endpoint %s must not carry credentials: put the token in HF_TOKEN", u.Redacted())
	}
	if strings.ContainsAny(o.Token, "\r\n") {
		return nil, errors.New("HF_TOKEN contains a line break: copy the token again without it")
	}
	base := o.HTTPClient
	if base == nil {
		base = &http.Client{Transport: defaultTransport()}
	}
	hc := *base
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{
		endpoint:    u,
		token:       o.Token,
		http:        &hc,
		maxAttempts: o.MaxAttempts,
		backoff:     o.Backoff,
	}
	if c.maxAttempts <= 0 {
		c.maxAttempts = 5
	}
	if c.backoff <= 0 {
		c.backoff = 500 * time.Millisecond
	}
	if !o.Quiet && o.Progress != nil {
		if f, ok := o.Progress.(*os.File); !ok || term.IsTerminal(int(f.Fd())) {
			c.progressOut = o.Progress
		}
	}
	return c, nil
}

// defaultTransport bounds the phases that can hang; the body itself may take as long as it needs
// (cancel through the context).
func defaultTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
		ForceAttemptHTTP2:     true,
	}
}

// Endpoint is the base URL the client talks to.
func (c *Client) Endpoint() string { return c.endpoint.String() }

// URL is the resolve URL of a request: {endpoint}[/datasets]/{repo}/resolve/{revision}/{file}.
// The revision is one escaped path segment (refs/convert/parquet becomes refs%2Fconvert%2Fparquet).
func (c *Client) URL(req Request) (string, error) {
	if err := req.validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(c.endpoint.String(), "/"))
	if req.Type == Dataset {
		b.WriteString("/datasets")
	}
	for _, seg := range strings.Split(req.Repo, "/") {
		b.WriteString("/" + url.PathEscape(seg))
	}
	b.WriteString("/resolve/" + url.PathEscape(req.Revision))
	for _, seg := range strings.Split(req.File, "/") {
		b.WriteString("/" + url.PathEscape(seg))
	}
	return b.String(), nil
}

// Close waits for progress bars to finish drawing. Downloads may start again afterwards.
func (c *Client) Close() {
	c.progressMu.Lock()
	p := c.progress
	c.progress = nil
	c.progressMu.Unlock()
	if p != nil {
		p.Wait()
	}
}

func isSHA256(s string) bool    { return isLowerHex(s, 64) }
func isCommitSHA(s string) bool { return isLowerHex(s, 40) }

// isLowerHex reports whether s is exactly n lowercase hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if (ch < '0' || ch > '9') && (ch < 'a' || ch > 'f') {
			return false
		}
	}
	return true
}
