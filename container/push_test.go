package container

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/rivalbench/rival/container/dockertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container/registrytest"
)

// TestPushAndPullByDigest pushes the probe image to a real registry, checks the digest against the
// registry's own answer (the Docker-Content-Digest of the manifest), removes every local name of the
// image and pulls it back by digest.
func TestPushAndPullByDigest(t *testing.T) {
	e := needProbe(t)
	addr := registrytest.Start(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: an anonymous push
	ctx := context.Background()
	repo := addr + "/rival-test/probe"
	var progress bytes.Buffer
	p, err := e.Push(ctx, probeImage, repo+":push-test", &progress)
	require.NoError(t, err)
	assert.Equal(t, repo, p.Repository)
	assert.Equal(t, "push-test", p.Tag)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, p.Digest)
	assert.Equal(t, repo+"@"+p.Digest, p.Ref())

	// The registry's answer, asked over HTTP without the daemon: the oracle for the digest.
	req, err := http.NewRequest(http.MethodHead, fmt.Sprintf("http://%s/v2/rival-test/probe/manifests/push-test", addr), nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, p.Digest, resp.Header.Get("Docker-Content-Digest"))

	// Pull by digest into a daemon that no longer has the pushed name.
	_, err = dockertest.Daemon(t).ImageRemove(ctx, repo+":push-test", client.ImageRemoveOptions{})
	require.NoError(t, err)
	pull, err := dockertest.Daemon(t).ImagePull(ctx, p.Ref(), client.ImagePullOptions{})
	require.NoError(t, err)
	require.NoError(t, pull.Wait(ctx))
	id, err := e.ImageID(ctx, p.Ref())
	require.NoError(t, err)
	assert.Equal(t, p.LocalID, id, "the image pulled by digest is the one pushed")
	t.Cleanup(func() { dockertest.Daemon(t).ImageRemove(ctx, p.Ref(), client.ImageRemoveOptions{Force: true}) })
}

// TestPushWithCredentialsFromDockerConfig pushes to a registry that requires a login: refused
// without credentials (the error says to log in), accepted with the ones `docker login` would have
// stored, and the password appears in no output.
func TestPushWithCredentialsFromDockerConfig(t *testing.T) {
	e := needProbe(t)
	const user, password = "rival", "pa55-w0rd-for-the-test"
	addr := registrytest.StartWithAuth(t, user, password)
	ctx := context.Background()
	repo := addr + "/rival-test/probe:auth"

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	var progress bytes.Buffer
	_, err := e.Push(ctx, probeImage, repo, &progress)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "docker login "+addr)

	writeDockerConfig(t, map[string]any{"auths": map[string]any{
		addr: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}}})
	progress.Reset()
	p, err := e.Push(ctx, probeImage, repo, &progress)
	require.NoError(t, err)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, p.Digest)
	assert.NotContains(t, progress.String(), password)
	t.Cleanup(func() {
		dockertest.Daemon(t).ImageRemove(context.Background(), repo, client.ImageRemoveOptions{Force: true})
	})
}

func TestPushRefusesBadTargets(t *testing.T) {
	e := needProbe(t)
	for _, target := range []string{"UPPER/case", "repo@sha256:" + fmt.Sprintf("%064x", 1), ""} {
		_, err := e.Push(context.Background(), probeImage, target, nil)
		require.Error(t, err, target)
	}
	// A registry that does not answer: the error names it.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	_, err := e.Push(context.Background(), probeImage, "127.0.0.1:1/rival-test/probe", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "127.0.0.1:1")
}

func writeDockerConfig(t *testing.T, cfg any) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600))
}

func decodeAuth(t *testing.T, v string) map[string]string {
	b, err := base64.URLEncoding.DecodeString(v)
	require.NoError(t, err)
	var m map[string]string
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestRegistryAuthFromDockerConfig(t *testing.T) {
	secret := "s3cr3t-pa55"
	writeDockerConfig(t, map[string]any{"auths": map[string]any{
		"registry.example.com:5000":   map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("alice:" + secret))},
		"https://other.example.com":   map[string]string{"identitytoken": "tok-123"},
		"broken.example.com":          map[string]string{"auth": "%%%"},
		"https://index.docker.io/v1/": map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("bob:pw"))},
	}})
	v, err := RegistryAuth(context.Background(), "registry.example.com:5000")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"username": "alice", "password": secret, "serveraddress": "registry.example.com:5000"}, decodeAuth(t, v))
	v, err = RegistryAuth(context.Background(), "other.example.com")
	require.NoError(t, err)
	assert.Equal(t, "tok-123", decodeAuth(t, v)["identitytoken"])
	v, err = RegistryAuth(context.Background(), "docker.io")
	require.NoError(t, err)
	assert.Equal(t, "bob", decodeAuth(t, v)["username"])
	v, err = RegistryAuth(context.Background(), "unknown.example.com")
	require.NoError(t, err)
	assert.Empty(t, v, "no entry: an anonymous push")
	_, err = RegistryAuth(context.Background(), "broken.example.com")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "docker login broken.example.com")

	// A config that is not JSON: the error gives the position, not the text (which may hold a secret).
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": {"x": {"auth": "`+secret+`"}`), 0o600))
	_, err = RegistryAuth(context.Background(), "x")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	assert.Contains(t, err.Error(), filepath.Join(dir, "config.json"))
}

// FuzzRegistryAuth: any config file gives credentials or an error that holds none of its text.
func FuzzRegistryAuth(f *testing.F) {
	f.Add([]byte(`{"auths":{"h":{"auth":"YTpi"}}}`), "h")
	f.Add([]byte(`{"auths":{"h":{"auth":"not base64"}}}`), "h")
	f.Add([]byte(`{"auths":[]}`), "h")
	dir := f.TempDir()
	f.Setenv("DOCKER_CONFIG", dir)
	f.Fuzz(func(t *testing.T, cfg []byte, host string) {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := RegistryAuth(context.Background(), host)
		if err != nil && len(cfg) > 12 && bytes.Contains([]byte(err.Error()), cfg) {
			t.Fatalf("error repeats the config: %v", err)
		}
	})
}

// The credential helpers the Docker config names (credHelpers for one registry, else credsStore)
// answer as docker-credential-* programs do: credentials, "credentials not found" (an anonymous
// push), or nothing at all, as one waiting for a passphrase does: that one is given up after
// HelperTimeout, naming it and saying what to do.
func TestCredentialHelpers(t *testing.T) {
	bin := t.TempDir()
	helpers := map[string]string{
		"good":   `read host; printf '{"ServerURL":"%s","Username":"carol","Secret":"pw-from-helper"}' "$host"`,
		"token":  `printf '{"Username":"<token>","Secret":"tok-9"}'`,
		"absent": `echo "credentials not found in native keychain"; exit 1`,
		"broken": `echo "no such keyring" >&2; exit 3`,
		"hangs":  `exec sleep 600`,
	}
	for name, body := range helpers {
		require.NoError(t, os.WriteFile(filepath.Join(bin, "docker-credential-"+name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	writeDockerConfig(t, map[string]any{"credsStore": "good", "credHelpers": map[string]string{
		"tok.example": "token", "none.example": "absent", "broken.example": "broken", "slow.example": "hangs"}})
	ctx := context.Background()

	v, err := RegistryAuth(ctx, "registry.example")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"username": "carol", "password": "pw-from-helper", "serveraddress": "registry.example"}, decodeAuth(t, v))
	v, err = RegistryAuth(ctx, "tok.example")
	require.NoError(t, err)
	assert.Equal(t, "tok-9", decodeAuth(t, v)["identitytoken"])
	v, err = RegistryAuth(ctx, "none.example")
	require.NoError(t, err)
	assert.Empty(t, v, "no credentials: an anonymous push")
	_, err = RegistryAuth(ctx, "broken.example")
	require.ErrorContains(t, err, "credential helper docker-credential-broken for broken.example failed")

	old := HelperTimeout
	HelperTimeout = 300 * time.Millisecond
	t.Cleanup(func() { HelperTimeout = old })
	_, err = RegistryAuth(ctx, "slow.example")
	require.ErrorContains(t, err, "credential helper docker-credential-hangs for slow.example did not answer within 300ms")
	assert.Contains(t, err.Error(), "docker login slow.example")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = RegistryAuth(cancelled, "slow.example")
	require.ErrorIs(t, err, context.Canceled)
}
