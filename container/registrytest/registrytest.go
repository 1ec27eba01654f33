// Package registrytest starts a real image registry for tests: the CNCF distribution registry from
// Debian's docker-registry package (/usr/bin/docker-registry), on a free loopback port with its
// storage under a temporary directory. The Docker daemon treats 127.0.0.0/8 registries as insecure
// (plain HTTP) by default, so pushes and pulls reach it without TLS. Tests skip when the binary is
// missing; with RIVAL_REQUIRE_REGISTRY=1 (CI) they fail instead.
package registrytest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binary is the registry Debian's docker-registry package installs.
const Binary = "/usr/bin/docker-registry"

// RequireEnv turns a missing registry into a failure.
const RequireEnv = "RIVAL_REQUIRE_REGISTRY"

// Start runs a registry until the test ends and returns its host:port (127.0.0.1:PORT).
func Start(t testing.TB) string {
	t.Helper()
	return start(t, "", "")
}

// StartWithAuth runs a registry that accepts only user with password (htpasswd, bcrypt; the hash is
// made with python3's crypt module, as Debian 12's python3 ships it).
func StartWithAuth(t testing.TB, user, password string) string {
	t.Helper()
	return start(t, user, password)
}

func start(t testing.TB, user, password string) string {
	t.Helper()
	return StartServer(t, Options{User: user, Password: password}).Addr
}

// Options configure StartServer.
type Options struct {
	// User and Password, when User is set, make the registry demand them (htpasswd, bcrypt).
	User, Password string
	// TLS serves HTTPS with a certificate for 127.0.0.1 and localhost, signed by a certificate
	// authority made for this server (Server.CAFile).
	TLS bool
}

// Server is a running registry.
type Server struct {
	Addr    string // 127.0.0.1:PORT
	Storage string // the filesystem driver's root directory: blobs under docker/registry/v2/blobs
	CAFile  string // with TLS, the PEM of the certificate authority that signed the server's certificate
	t       testing.TB
	conf    string
	logf    *os.File
	cmd     *exec.Cmd
	done    chan struct{}
	opt     Options
}

// StartServer runs a registry until the test ends, with auth and TLS as opt asks.
func StartServer(t testing.TB, opt Options) *Server {
	t.Helper()
	user, password := opt.User, opt.Password
	if _, err := os.Stat(Binary); err != nil {
		msg := fmt.Sprintf("no image registry to test against (%v): apt-get install docker-registry", err)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	conf := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "storage"), addr)
	if user != "" {
		py := exec.Command("python3", "-W", "ignore", "-c",
			"import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))", password)
		hash, err := py.Output()
		if err != nil {
			t.Fatalf("bcrypt a test password with python3's crypt module: %v", err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(user+":"+strings.TrimSpace(string(hash))+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		conf += fmt.Sprintf("auth:\n  htpasswd:\n    realm: rival-test\n    path: %s\n", htpasswd)
	}
	srv := &Server{Addr: addr, Storage: filepath.Join(dir, "storage"), t: t, opt: opt}
	if opt.TLS {
		cert, key, ca := makeCerts(t, dir)
		srv.CAFile = ca
		conf = strings.Replace(conf, "http:\n  addr: "+addr+"\n", fmt.Sprintf("http:\n  addr: %s\n  tls:\n    certificate: %s\n    key: %s\n", addr, cert, key), 1)
	}
	srv.conf = filepath.Join(dir, "config.yml")
	if err := os.WriteFile(srv.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv.logf = logf
	t.Cleanup(func() {
		srv.stop(syscall.SIGTERM)
		logf.Close()
	})
	srv.Restart()
	return srv
}

// Kill stops the registry at once (SIGKILL), as a crash or a pulled cable would.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

func (s *Server) stop(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, sig)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
}

// Restart starts the registry again on the same address and storage (after Kill), and waits until
// it answers.
func (s *Server) Restart() {
	t := s.t
	t.Helper()
	s.stop(syscall.SIGTERM)
	cmd := exec.Command(Binary, "serve", s.conf)
	cmd.Stdout, cmd.Stderr = s.logf, s.logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", Binary, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	client := http.DefaultClient
	scheme := "http"
	if s.opt.TLS {
		scheme = "https"
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+s.Addr+"/v2/", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || (s.opt.User != "" && resp.StatusCode == http.StatusUnauthorized) {
				return
			}
		}
		select {
		case <-done:
			log, _ := os.ReadFile(s.logf.Name())
			t.Fatalf("%s exited before answering:\n%s", Binary, log)
		case <-ctx.Done():
			log, _ := os.ReadFile(s.logf.Name())
			t.Fatalf("%s did not answer on %s:\n%s", Binary, s.Addr, log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// BlobPath is where the registry's filesystem storage keeps the blob of sha256 hex digest h.
func (s *Server) BlobPath(h string) string {
	return filepath.Join(s.Storage, "docker", "registry", "v2", "blobs", "sha256", h[:2], h, "data")
}

// makeCerts writes a certificate authority and a server certificate for 127.0.0.1 and localhost
// it signs, and returns the server's certificate and key files and the authority's certificate.
func makeCerts(t testing.TB, dir string) (certFile, keyFile, caFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "registrytest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("server.crt", "CERTIFICATE", der), write("server.key", "EC PRIVATE KEY", keyDER), write("ca.crt", "CERTIFICATE", caDER)
}
