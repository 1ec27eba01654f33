package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A request the rate limiter refuses because it would have to wait past the deadline is the
// deadline, as the run's timeout handling expects; other errors stay the cluster's.
func TestEndedReadsTheRateLimitersRefusal(t *testing.T) {
	refused := errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	assert.ErrorIs(t, ended(ctx, refused), context.DeadlineExceeded)
	assert.NoError(t, ended(ctx, errors.New("jobs.batch \"x\" not found")))
	assert.NoError(t, ended(context.Background(), refused), "no deadline: not the deadline")
	done, stop := context.WithCancel(context.Background())
	stop()
	assert.ErrorIs(t, ended(done, refused), context.Canceled)
}
