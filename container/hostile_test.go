package container_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// The Docker client configuration and a build context's .dockerignore
// are small files the user controls: one that is not a regular file of
// configuration size is refused, naming it.
func TestConfigFilesRefuseHostileFiles(t *testing.T) {
	readers := []struct {
		name string
		path func(dir string) string
		read func(t *testing.T, dir string) error
	}{
		{"docker config", func(dir string) string { return filepath.Join(dir, "config.json") }, func(t *testing.T, dir string) error {
			t.Setenv("DOCKER_CONFIG", dir)
			_, err := container.RegistryAuth(context.Background(), "registry.example")
			return err
		}},
		{".dockerignore", func(dir string) string { return filepath.Join(dir, ".dockerignore") }, func(t *testing.T, dir string) error {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644))
			_, err := container.ContextDigest(dir, container.ContextOptions{})
			return err
		}},
	}
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitConfig, func(t *testing.T) (string, func() error) {
				dir := t.TempDir()
				return r.path(dir), func() error { return r.read(t, dir) }
			})
		})
	}
}
