// Package registrytest starts a real image registry for tests: the CNCF distribution registry from
// Debian's docker-registry package (/usr/bin/docker-registry), on a free loopback port with its
// storage under a temporary directory. The Docker daemon treats 127.0.0.0/8 registries as insecure
// (plain HTTP) by default, so pushes and pulls reach it without TLS. Tests skip when the binary is
// missing; with RIVAL_REQUIRE_REGISTRY=1 (CI) they fail instead.
package registrytest

import (
	"context"
	"fmt"
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
	confPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary, "serve", confPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", Binary, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || (user != "" && resp.StatusCode == http.StatusUnauthorized) {
				return addr
			}
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("%s exited before answering:\n%s", Binary, log)
		case <-ctx.Done():
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("%s did not answer on %s:\n%s", Binary, addr, log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
