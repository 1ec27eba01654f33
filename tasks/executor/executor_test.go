package executor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The executor kind is part of every training key: its spellings must not
// change, or every cached run trains again.
func TestExecutorKindsKeepTheirSpellings(t *testing.T) {
	assert.Equal(t, Kind("host"), Host{}.Kind())
	assert.Equal(t, Kind("docker"), (&Docker{}).Kind())
	assert.Equal(t, Kind("slurm"), (&Slurm{}).Kind())
	assert.Equal(t, Kind("k8s"), (&Kube{}).Kind())
}
