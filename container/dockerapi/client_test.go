package dockerapi

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOlder(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1.41", "1.56", true}, {"1.56", "1.41", false}, {"1.9", "1.41", true}, {"1.41", "1.41", false},
		{"1", "1.0", false}, {"2.0", "1.99", false}, {"", "1.41", true},
	} {
		assert.Equal(t, tc.want, older(tc.a, tc.b), "%s < %s", tc.a, tc.b)
	}
}

func TestFromEnvRefusals(t *testing.T) {
	for host, want := range map[string]string{
		"ssh://me@host":         "over unix:// or tcp://, not ssh://",
		"tcp://10.0.0.1":        "no port",
		"unix://":               "no socket path",
		"npipe:////./pipe/dock": "not npipe://",
	} {
		t.Setenv("DOCKER_HOST", host)
		_, err := FromEnv()
		require.ErrorContains(t, err, want, host)
	}
	t.Setenv("DOCKER_HOST", "unix:///run/docker.sock")
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	_, err := FromEnv()
	require.ErrorContains(t, err, "TLS needs a tcp:// address")
}

// daemon is a stand-in on a unix socket that answers as dockerd 20.10 does: API 1.41, its
// refusals as {"message": ...}.
func daemon(t *testing.T, h http.HandlerFunc) string {
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	s := httptest.NewUnstartedServer(h)
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return "unix://" + sock
}

func TestPingAgreesOnTheDaemonsVersion(t *testing.T) {
	var paths []string
	host := daemon(t, func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("API-Version", "1.41")
		w.Header().Set("OSType", "linux")
		if r.URL.Path == "/_ping" {
			w.Write([]byte("OK"))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"No such image: rival/none:latest"}`))
	})
	t.Setenv("DOCKER_HOST", host)
	c, err := FromEnv()
	require.NoError(t, err)
	p, err := c.Ping(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Ping{APIVersion: "1.41", OSType: "linux"}, p)
	assert.Equal(t, "1.41", c.Version())
	_, err = c.ImageInspect(context.Background(), "rival/none:latest")
	require.EqualError(t, err, "Error response from daemon: No such image: rival/none:latest")
	assert.True(t, IsNotFound(err))
	assert.True(t, IsRequestRefused(err))
	assert.False(t, IsConflict(err))
	assert.Equal(t, []string{"/_ping", "/v1.41/images/rival/none:latest/json"}, paths)

	t.Setenv("DOCKER_API_VERSION", "1.44")
	pinned, err := FromEnv()
	require.NoError(t, err)
	_, err = pinned.Ping(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "1.44", pinned.Version(), "DOCKER_API_VERSION is kept")
}

func TestNoDaemonNamesTheAddress(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	c, err := FromEnv()
	require.NoError(t, err)
	_, err = c.Ping(context.Background())
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "cannot connect to the Docker daemon at unix://"+sock), err.Error())
}

// A refusal's body is the daemon's message, whatever shape it takes, and a refusal never says
// nothing.
func FuzzReadError(f *testing.F) {
	f.Add(404, []byte(`{"message":"No such container: x"}`))
	f.Add(500, []byte("plain text"))
	f.Add(409, []byte(""))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 400 || status > 599 {
			return
		}
		resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Body: http.NoBody}
		resp.Body = nopCloser{strings.NewReader(string(body))}
		err := readError(resp)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, status, e.Status)
		assert.NotEmpty(t, strings.TrimSpace(e.Message))
	})
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }

// Over tcp:// with DOCKER_TLS_VERIFY, the daemon's certificate is checked against its address
// (the requests themselves name the host "docker"), for plain calls and for an attach alike.
func TestTLSDaemon(t *testing.T) {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("API-Version", "1.41")
		if !strings.HasSuffix(r.URL.Path, "/attach") {
			w.Write([]byte("OK"))
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\nhello from the container")
		buf.Flush()
	}))
	s.StartTLS()
	t.Cleanup(s.Close)
	certs := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	require.NoError(t, os.WriteFile(filepath.Join(certs, "ca.pem"), ca, 0o644))
	t.Setenv("DOCKER_HOST", "tcp://"+s.Listener.Addr().String())
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	t.Setenv("DOCKER_CERT_PATH", certs)
	c, err := FromEnv()
	require.NoError(t, err)
	_, err = c.Ping(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "1.41", c.Version())
	h, err := c.ContainerAttach(context.Background(), "x", false)
	require.NoError(t, err)
	got, err := io.ReadAll(h.Reader)
	require.NoError(t, err)
	assert.Equal(t, "hello from the container", string(got))
	require.NoError(t, h.Close())

	// Another CA: refused, naming the address.
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(certs, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	c, err = FromEnv()
	require.NoError(t, err)
	_, err = c.Ping(context.Background())
	require.ErrorContains(t, err, "cannot connect to the Docker daemon at tcp://"+s.Listener.Addr().String())
	require.ErrorContains(t, err, "certificate")
}
