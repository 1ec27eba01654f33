package tasks

import (
	"context"
	"errors"
)

// ErrNoTorch explains how to get PyTorch for CPU training runs.
var ErrNoTorch = errors.New("training on the CPU needs python3 with PyTorch, which this host lacks: " +
	"install it with `sudo apt-get install python3-torch python3-numpy libopenblas0-pthread` (Debian, Ubuntu) " +
	"or `pip install torch numpy`, then run the command again")

// checkTorch fails with ErrNoTorch unless python3 can import torch and numpy.
func checkTorch(ctx context.Context, python string) error {
	_, err := probeTorch(ctx, python)
	return err
}
