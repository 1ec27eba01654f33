package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"time"

	"github.com/rivalbench/rival/safefile"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Credential is what a registry accepts: a user name and password, or an identity token (what
// `docker login` stores for registries that issue refresh tokens).
type Credential struct {
	Username, Password string
	IdentityToken      string
}

// Progress is one step of a blob transfer, for a progress line.
type Progress struct {
	Op      string // "push" or "pull"
	Name    string // what the blob is (an output's path)
	Done    int64  // bytes moved so far
	Total   int64
	Elapsed time.Duration
}

// Options say how to reach a store.
type Options struct {
	// Insecure allows plain HTTP and unverified certificates for a registry that is not on a
	// loopback address (a loopback registry may always speak plain HTTP).
	Insecure bool
	// CAFile is a PEM file of certificate authorities trusted beside the system's.
	CAFile string
	// Credential returns the credential for a registry host ("" user for anonymous access). It is
	// asked when the registry demands one; its values never appear in errors or output.
	Credential func(ctx context.Context, host string) (Credential, error)
	// Timeout bounds connecting, the TLS handshake and each response's headers; a whole small
	// request (a lookup) gets twice it. Zero means 10 s.
	Timeout time.Duration
	// Stall aborts a blob transfer that moved no byte for this long. Zero means 60 s.
	Stall time.Duration
	// Attempts is how often one blob's transfer is tried before its push or pull fails. Zero means 3.
	Attempts int
	// Progress, when set, is called as blobs move.
	Progress func(Progress)
}

// Store is a repository of an OCI registry holding Rival's entries. It is safe for concurrent use.
type Store struct {
	Location Location
	repo     *remote.Repository
	opt      Options
	plain    bool
}

// Errors a caller tells apart.
var (
	// ErrNotFound: the store holds no such entry (or not all of it).
	ErrNotFound = errors.New("not in the store")
	// ErrIntegrity: the store holds an entry whose bytes are not what its manifest records
	// (tampered with or truncated): it was not used.
	ErrIntegrity = errors.New("store content does not match its recorded digest")
	// ErrNotTheTask: the entry under a task's key records other outputs than the task makes (made
	// up, or from a Rival that keys differently): it was refused before any blob moved.
	ErrNotTheTask = errors.New("the entry is not this task's")
	// ErrUnauthorized: the registry refused the credentials (or demanded some and none were found).
	ErrUnauthorized = errors.New("the registry refused the credentials")
)

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 10 * time.Second
}

func (o Options) stall() time.Duration {
	if o.Stall > 0 {
		return o.Stall
	}
	return 60 * time.Second
}

func (o Options) attempts() int {
	if o.Attempts > 0 {
		return o.Attempts
	}
	return 3
}

// Open checks that the store at loc answers and accepts the credentials, and returns a client for
// it. A registry on a loopback address, or one named insecure, is tried with TLS first and with
// plain HTTP when it does not speak TLS; any other needs TLS with a certificate the system (or
// CAFile) trusts. Every request is bounded by opt's timeouts, so a store that is down or slow
// fails Open quickly.
func Open(ctx context.Context, loc Location, opt Options) (*Store, error) {
	client, err := httpClient(opt, loc.Loopback())
	if err != nil {
		return nil, err
	}
	cred := func(ctx context.Context, host string) (auth.Credential, error) {
		if opt.Credential == nil {
			return auth.EmptyCredential, nil
		}
		c, err := opt.Credential(ctx, host)
		if err != nil {
			return auth.EmptyCredential, err
		}
		if rt, ok := client.Transport.(*redacting); ok {
			rt.add(c.Password, c.IdentityToken)
		}
		return auth.Credential{Username: c.Username, Password: c.Password, RefreshToken: c.IdentityToken}, nil
	}
	ac := &auth.Client{Client: client, Credential: cred, Cache: auth.NewCache()}
	ac.SetUserAgent("rival-store")
	repo, err := remote.NewRepository(loc.Reference())
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", loc, err)
	}
	repo.Client = ac
	s := &Store{Location: loc, repo: repo, opt: opt}
	err = s.ping(ctx, false)
	if err != nil && (loc.Loopback() || opt.Insecure) && speaksPlainHTTP(err) {
		err = s.ping(ctx, true)
	}
	if err != nil {
		return nil, s.explain(err)
	}
	return s, nil
}

// PlainHTTP reports whether the store is reached without TLS.
func (s *Store) PlainHTTP() bool { return s.plain }

func (s *Store) ping(ctx context.Context, plain bool) error {
	reg, err := remote.NewRegistry(s.Location.Host)
	if err != nil {
		return err
	}
	reg.Client = s.repo.Client
	reg.PlainHTTP = plain
	ctx, cancel := context.WithTimeout(ctx, 2*s.opt.timeout())
	defer cancel()
	if err := reg.Ping(ctx); err != nil {
		return err
	}
	s.plain = plain
	s.repo.PlainHTTP = plain
	return nil
}

// speaksPlainHTTP reports whether a TLS attempt failed because the server answered in plain HTTP.
func speaksPlainHTTP(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh) || errors.Is(err, http.ErrSchemeMismatch) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

func httpClient(opt Options, loopback bool) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if opt.CAFile != "" {
		pem, err := safefile.ReadFile(context.Background(), opt.CAFile, safefile.LimitConfig)
		if err != nil {
			return nil, fmt.Errorf("store CA file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store CA file %s holds no PEM certificate", opt.CAFile)
		}
	}
	t := opt.timeout()
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: t, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   t,
		ResponseHeaderTimeout: 3 * t, // a blob upload's final response waits for the registry to check it
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, InsecureSkipVerify: opt.Insecure},
	}
	return &http.Client{Transport: &redacting{next: tr}}, nil
}

// explain turns a registry error into one that says what to do.
func (s *Store) explain(err error) error {
	var er *errcode.ErrorResponse
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("store %s: %w: the registry demands a login and the Docker config holds none for %s: run `docker login %s`", s.Location, ErrUnauthorized, s.Location.Host, s.Location.Host)
	case errors.As(err, &er) && (er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden):
		return fmt.Errorf("store %s: %w (HTTP %d): run `docker login %s` with an account that may push to %s", s.Location, ErrUnauthorized, er.StatusCode, s.Location.Host, s.Location.Repository)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("store %s: no answer within %s: is the registry up and reachable? (%v)", s.Location, 2*s.opt.timeout(), err)
	case speaksPlainHTTP(err):
		return fmt.Errorf("store %s speaks plain HTTP: give it TLS, or set RIVAL_STORE_INSECURE=1 to accept that (%v)", s.Location, err)
	case strings.Contains(err.Error(), "x509:") || strings.Contains(err.Error(), "certificate"):
		return fmt.Errorf("store %s: its TLS certificate is not trusted (%v): set RIVAL_STORE_CA to the PEM file of its certificate authority", s.Location, err)
	case errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("store %s: %w", s.Location, ErrNotFound)
	}
	return fmt.Errorf("store %s: %w", s.Location, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryable reports whether a failed transfer may succeed when tried again: a dropped
// connection, a timeout or a server error, not a refusal.
func retryable(err error) bool {
	if errors.Is(err, ErrIntegrity) || errors.Is(err, ErrNotTheTask) || errors.Is(err, ErrNotFound) || errors.Is(err, errdef.ErrNotFound) ||
		errors.Is(err, auth.ErrBasicCredentialNotFound) || errors.Is(err, context.Canceled) {
		return false
	}
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		return er.StatusCode >= 500 || er.StatusCode == http.StatusTooManyRequests || er.StatusCode == http.StatusRequestTimeout
	}
	return true
}
