package upstreamtest

import (
	"context"
	"os"
	"testing"

	"github.com/rivalbench/rival/container"
)

// TorchImage is the local Debian trixie image with torch 2.6 (container/testdata/make-torch-base.sh),
// where tests run the frameworks' own code with real torch on the CPU.
const TorchImage = "rival-test/torch-base:trixie"

// TorchEngine returns a Docker engine that has TorchImage, or skips (fails under
// RIVAL_TEST_TORCH_IMAGE=1, as CI sets it) naming the command that provides it.
func TorchEngine(t *testing.T) *container.Engine {
	t.Helper()
	stop := t.Skipf
	if os.Getenv("RIVAL_TEST_TORCH_IMAGE") == "1" {
		stop = t.Fatalf
	}
	e, err := container.Connect(context.Background())
	if err != nil {
		stop("no Docker daemon to run torch in %s: %v (start dockerd, then: sudo SUITE=trixie bash container/testdata/make-torch-base.sh)", TorchImage, err)
		return nil
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.ImageID(context.Background(), TorchImage); err != nil {
		stop("image %s is missing: build it with sudo SUITE=trixie bash container/testdata/make-torch-base.sh (%v)", TorchImage, err)
		return nil
	}
	return e
}
