package compare_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/compare"
)

// Rival's own fsdp trainer records the path it took (single, ddp) in its
// version and never recomputes activations: the configuration lines of its
// runs say so instead of "not recorded: DDP/FSDP, recompute".
func TestFSDPRunsKnowTheirShardingAndRecompute(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "html", "train_*.json"))
	require.NoError(t, err)
	inputs, problems := compare.LoadFiles(context.Background(), files, nil)
	require.Empty(t, problems)
	rep, err := compare.Analyze(inputs, compare.DefaultPrices())
	require.NoError(t, err)
	var con, md bytes.Buffer
	rep.Console(&con)
	require.NoError(t, rep.WriteMarkdown(&md))
	for name, out := range map[string]string{"console": con.String(), "report.md": md.String()} {
		assert.NotContains(t, out, "not recorded: DDP/FSDP", name)
		assert.NotContains(t, out, "recompute)", name)
		assert.Contains(t, out, "DDP/FSDP none (one process), recompute none", name)
		assert.Contains(t, out, "DDP/FSDP DDP, recompute none", name)
	}
}

// Another framework's run that records neither still says so.
func TestOtherFrameworksStillSayWhatIsNotRecorded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "results", "*.json"))
	require.NoError(t, err)
	inputs, _ := compare.LoadFiles(context.Background(), files, nil)
	rep, err := compare.Analyze(inputs, compare.DefaultPrices())
	require.NoError(t, err)
	var con strings.Builder
	rep.Console(&con)
	assert.Contains(t, con.String(), "(not recorded: DDP/FSDP, recompute)")
}
