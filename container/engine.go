package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rivalbench/rival/container/dockerapi"
)

// Engine is a connection to one Docker daemon.
type Engine struct {
	api *dockerapi.Client
	// Host is the daemon address in use (DOCKER_HOST or the default socket).
	Host string
	// APIVersion is the API version agreed with the daemon.
	APIVersion string
}

// pingTimeout bounds the first contact, so a wedged daemon fails fast.
const pingTimeout = 15 * time.Second

// Connect reaches the daemon at DOCKER_HOST (or the default socket),
// negotiates the API version and pings it. When nothing answers, the error
// names the address and says how to start the daemon.
func Connect(ctx context.Context) (*Engine, error) {
	api, err := dockerapi.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("docker client (DOCKER_HOST=%q): %w", os.Getenv("DOCKER_HOST"), err)
	}
	host := api.Host()
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ping, err := api.Ping(pctx)
	if err != nil {
		api.Close()
		return nil, unreachable(host, err)
	}
	if ping.OSType != "" && ping.OSType != "linux" {
		api.Close()
		return nil, fmt.Errorf("docker daemon at %s runs %s containers; Rival needs a Linux daemon", host, ping.OSType)
	}
	return &Engine{api: api, Host: host, APIVersion: api.Version()}, nil
}

// ErrDaemonUnreachable marks Connect failures where no daemon answered.
var ErrDaemonUnreachable = errors.New("docker daemon not reachable")

func unreachable(host string, err error) error {
	msg := err.Error()
	hint := "start it with `sudo systemctl start docker` (or run `sudo dockerd &` on hosts without systemd), or point DOCKER_HOST at a running daemon"
	if strings.Contains(msg, "permission denied") {
		hint = "this user may not use the socket: run as root, or add the user to the docker group (`sudo usermod -aG docker $USER`, then log in again)"
	}
	return fmt.Errorf("%w at %s: %v: %s", ErrDaemonUnreachable, host, err, hint)
}

// Close releases the connection.
func (e *Engine) Close() error { return e.api.Close() }
