package result

import (
	"testing"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuildLeavesTailAlone: Build reads log.Tail (streaming statistics of the steps
// after the head) and must not write into it, even when its step-time histogram is
// in sketch mode, so a log can be built twice (train, then verify) with the same
// numbers.
func TestBuildLeavesTailAlone(t *testing.T) {
	log := &logparse.Log{Source: "synthetic", Framework: logparse.Megatron}
	gbs := 8
	for i := 1; i <= logparse.HeadSteps; i++ {
		v := 0.5
		log.Steps = append(log.Steps, logparse.Step{Step: i, StepTimeSeconds: &v, GlobalBatchSize: &gbs})
	}
	half := logparse.ExactValues/2 + 64
	for i := 0; i < 2*half; i++ {
		v := 1 + float64(i%100000)/1000
		log.Tail.AddStep(&logparse.Step{StepTimeSeconds: &v})
	}
	log.StepCount = len(log.Steps) + 2*half
	before := log.Tail.StepTime.Summary()
	facts := Facts{GPUs: 8, SeqLen: 4096, GBS: 8, WarmupSteps: new(int)}
	r1, err := Build(log, facts)
	require.NoError(t, err)
	assert.Equal(t, before, log.Tail.StepTime.Summary(), "Build changed the log's tail statistics")
	r2, err := Build(log, facts)
	require.NoError(t, err)
	assert.Equal(t, r1.PerformanceMetrics, r2.PerformanceMetrics, "a second Build of the same log gives other numbers")
}
