// Package dockerapi is a client of the Docker Engine API with the calls Rival makes: ping, build,
// inspect, tag and push an image; create, attach, start, wait for, stop, resize, list, inspect and
// remove a container. It speaks HTTP over the daemon's socket (or TCP, with TLS when the
// environment asks for it) with the request and response types of the API module. The daemon's
// own client library carries telemetry and many more calls; this package keeps them out of the
// targets' compile.
package dockerapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MaxVersion is the newest API version this client speaks: that of the API module whose types it
// sends. Ping agrees on the daemon's version when it is older.
const MaxVersion = "1.56"

// DefaultHost is the daemon's socket when DOCKER_HOST is unset.
const DefaultHost = "unix:///var/run/docker.sock"

// Client talks to one daemon.
type Client struct {
	host    string // as configured: unix:///path or tcp://host:port
	scheme  string // http or https
	addr    string // the socket path or host:port
	network string // unix or tcp
	tls     *tls.Config
	version string
	pinned  bool // DOCKER_API_VERSION fixed the version
	http    *http.Client
}

// FromEnv is a client for DOCKER_HOST (default DefaultHost), with TLS when DOCKER_TLS_VERIFY or
// DOCKER_CERT_PATH is set (the certificates ca.pem, cert.pem and key.pem in DOCKER_CERT_PATH, else
// ~/.docker), at DOCKER_API_VERSION when set.
func FromEnv() (*Client, error) {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = DefaultHost
	}
	c := &Client{host: host, scheme: "http", version: MaxVersion}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("DOCKER_HOST %q: %w", host, err)
	}
	switch u.Scheme {
	case "unix":
		c.network, c.addr = "unix", u.Path
		if c.addr == "" {
			return nil, fmt.Errorf("DOCKER_HOST %q: no socket path", host)
		}
	case "tcp", "http", "https":
		c.network, c.addr = "tcp", u.Host
		if u.Port() == "" {
			return nil, fmt.Errorf("DOCKER_HOST %q: no port (the daemon listens on 2375, or 2376 with TLS)", host)
		}
	default:
		return nil, fmt.Errorf("DOCKER_HOST %q: Rival reaches a daemon over unix:// or tcp://, not %s://", host, u.Scheme)
	}
	verify := os.Getenv("DOCKER_TLS_VERIFY") != ""
	if certs := os.Getenv("DOCKER_CERT_PATH"); verify || certs != "" || u.Scheme == "https" {
		if c.network != "tcp" {
			return nil, fmt.Errorf("DOCKER_HOST %q: TLS needs a tcp:// address", host)
		}
		// https:// alone asks for TLS as the web knows it: the daemon's certificate checked
		// against the system's authorities.
		systemRoots := u.Scheme == "https" && !verify && certs == ""
		if c.tls, err = tlsConfig(certs, verify || systemRoots, systemRoots); err != nil {
			return nil, err
		}
		// Requests name the host "docker"; the certificate is checked against the daemon's name.
		c.tls.ServerName = u.Hostname()
		c.scheme = "https"
	}
	if v := os.Getenv("DOCKER_API_VERSION"); v != "" {
		c.version, c.pinned = strings.TrimPrefix(v, "v"), true
	}
	tr := &http.Transport{DialContext: c.dial, TLSClientConfig: c.tls, DisableCompression: true}
	if c.network == "tcp" {
		// A daemon over the network is reached through HTTP(S)_PROXY unless NO_PROXY names it, as
		// the docker command line reaches it.
		target := &url.URL{Scheme: c.scheme, Host: c.addr}
		tr.Proxy = func(*http.Request) (*url.URL, error) {
			return http.ProxyFromEnvironment(&http.Request{URL: target})
		}
	}
	c.http = &http.Client{Transport: tr}
	return c, nil
}

// tlsConfig reads the client certificate and, to verify the daemon, the CA from dir (default
// ~/.docker); systemRoots verifies against the system's authorities instead.
func tlsConfig(dir string, verify, systemRoots bool) (*tls.Config, error) {
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("DOCKER_CERT_PATH is unset and there is no home folder: %w", err)
		}
		dir = filepath.Join(home, ".docker")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify}
	if pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")); err == nil {
		cfg.Certificates = []tls.Certificate{pair}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("docker client certificate in %s: %w", dir, err)
	}
	if verify && !systemRoots {
		ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
		if err != nil {
			return nil, fmt.Errorf("DOCKER_TLS_VERIFY is set: the daemon's CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(dir, "ca.pem"))
		}
	}
	return cfg, nil
}

func (c *Client) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, c.network, c.addr)
}

// Host is the daemon's address as configured.
func (c *Client) Host() string { return c.host }

// Version is the API version requests use.
func (c *Client) Version() string { return c.version }

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// Ping is what the daemon says of itself.
type Ping struct {
	APIVersion, OSType string
}

// Ping asks the daemon for its API version and OS, and agrees on its version when it is older
// than MaxVersion (unless DOCKER_API_VERSION fixed one).
func (c *Client) Ping(ctx context.Context) (Ping, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.scheme+"://docker/_ping", nil)
	if err != nil {
		return Ping{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Ping{}, c.connErr(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	p := Ping{APIVersion: resp.Header.Get("API-Version"), OSType: resp.Header.Get("OSType")}
	if resp.StatusCode >= 400 && p.APIVersion == "" {
		return p, &Error{Status: resp.StatusCode, Message: resp.Status}
	}
	switch {
	case c.pinned:
	case p.APIVersion == "":
		// A daemon that does not say predates the header (API 1.25): ask in the oldest version.
		c.version = "1.24"
	case older(p.APIVersion, c.version):
		c.version = p.APIVersion
	}
	return p, nil
}

// older says whether API version a is before b ("1.41" < "1.56").
func older(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// Error is the daemon's refusal of a request.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return "Error response from daemon: " + e.Message }

// statusOf is the HTTP status of the daemon's refusal err, 0 when err is something else.
func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound: the daemon has no such object (404).
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsConflict: the object is in a state that refuses the request, or the name is taken (409).
func IsConflict(err error) bool { return statusOf(err) == http.StatusConflict }

// IsRequestRefused: the daemon refused the request as invalid or failed it (400, 404, 500, or a
// status it does not otherwise use), not for lack of permission or of a feature.
func IsRequestRefused(err error) bool {
	switch s := statusOf(err); s {
	case 0, http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict, http.StatusNotImplemented, http.StatusServiceUnavailable:
		return false
	default:
		return true
	}
}

// connErr says which address did not answer.
func (c *Client) connErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("cannot connect to the Docker daemon at %s: %w", c.host, err)
}

// request sends one API request; a status of 400 or more is an *Error with the daemon's message.
// The caller closes the body.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body io.Reader, header http.Header) (*http.Response, error) {
	u := c.scheme + "://docker/v" + c.version + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.connErr(err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

// readError is the daemon's message of a refused request: {"message": ...}, else its text.
func readError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var m struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &m) == nil && strings.TrimSpace(m.Message) != "" {
		msg = m.Message
	}
	if msg == "" {
		msg = strings.TrimSpace(resp.Status)
	}
	if msg == "" {
		msg = "HTTP status " + strconv.Itoa(resp.StatusCode)
	}
	return &Error{Status: resp.StatusCode, Message: msg}
}

// call sends a request with in as its JSON body (nil: none) and decodes the answer into out (nil:
// read and dropped).
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	resp, err := c.request(ctx, method, path, query, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: the daemon's answer: %w", method, path, err)
	}
	return nil
}

// Stream is a long answer read as it comes (build output, push progress).
type Stream = io.ReadCloser

// Hijacked is an attached container's stream: the connection the daemon took over, with what it
// sent after its answer buffered in Reader.
type Hijacked struct {
	Conn   net.Conn
	Reader *bufio.Reader
}

// Close ends the stream.
func (h *Hijacked) Close() error { return h.Conn.Close() }

// CloseWrite ends what is sent (the container's stdin sees EOF), keeping what it sends.
func (h *Hijacked) CloseWrite() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// hijack sends a request that asks the daemon to take over the connection (attach) and returns
// it once the daemon agreed.
func (c *Client) hijack(ctx context.Context, path string, query url.Values) (*Hijacked, error) {
	conn, err := c.dial(ctx, "", "")
	if err != nil {
		return nil, c.connErr(err)
	}
	if c.tls != nil {
		tc := tls.Client(conn, c.tls.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, c.connErr(err)
		}
		conn = tc
	}
	// The request must not outlive ctx while it waits for the answer.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	u := &url.URL{Scheme: c.scheme, Host: "docker", Path: "/v" + c.version + path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, c.connErr(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.connErr(err)
	}
	if resp.StatusCode >= 400 {
		defer conn.Close()
		return nil, readError(resp)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("attach: the daemon answered %s", resp.Status)
	}
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	return &Hijacked{Conn: conn, Reader: br}, nil
}
