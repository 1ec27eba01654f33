// Package dockertest gives tests the Docker daemon's own client library: a second client,
// independent of package container's, for what a test checks or cleans up behind it (removing
// an image, pulling one by digest, a container no Rival run made).
package dockertest

import (
	"context"
	"testing"

	"github.com/moby/moby/client"
)

// Daemon is a client of DOCKER_HOST's daemon at the API version it speaks, closed when t ends.
// The test fails when no daemon answers.
func Daemon(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	if _, err := c.Ping(context.Background(), client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		c.Close()
		t.Fatalf("docker daemon: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
