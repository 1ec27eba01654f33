package tasks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A CPU result names its CPU (model, cores, threads used) in cpu_info, and
// compare shows it where a GPU's name stands: the group's label and its
// configuration line, in the console, report.md and report.html.
func TestCPUResultsNameTheirCPU(t *testing.T) {
	withCPUFlags(t, "two-cores-four-threads.txt")
	w, log := newWorkspace(t, "")
	ex := &scriptedExecutor{steps: 6, lines: []string{
		"[rival-fsdp] device: cpu | threads per process: 2 | world size: 2 | data parallel: ddp | gradient accumulation: 1",
	}}
	task := trainTwoProcesses(t, w, ex)

	raw, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	var res struct {
		CPUInfo map[string]any `json:"cpu_info"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.Equal(t, map[string]any{
		"model": "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz", "cores": 2.0, "logical_cpus": 4.0,
		"processes": 2.0, "threads_per_process": 2.0,
	}, res.CPUInfo)

	ct, err := w.compareTask(nil)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), ct))
	var console strings.Builder
	w.reportCompare(ct, &console)
	outputs := map[string]string{"console": console.String()}
	for _, o := range ct.Outputs {
		if ext := filepath.Ext(o.Path); ext == ".md" || ext == ".html" {
			b, err := os.ReadFile(o.Path)
			require.NoError(t, err)
			outputs[filepath.Base(o.Path)] = string(b)
		}
	}
	require.Contains(t, outputs, "report.md")
	require.Contains(t, outputs, "report.html")
	for name, text := range outputs {
		// The label column of the console is cut at 28 characters; its
		// configuration line, where a GPU run gives its GPU count, has the rest.
		assert.Contains(t, text, "CPU (Xeon Platinum 8370C) F", "%s: the CPU's name in the group's label", name)
		assert.Contains(t, text, "CPU Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz, 2 cores / 4 threads, 2 processes × 2 threads", "%s: what the run used of it", name)
	}
	assert.Contains(t, outputs["report.md"], "CPU (Xeon Platinum 8370C) FSDP")
	assert.Contains(t, outputs["report.html"], "CPU (Xeon Platinum 8370C) FSDP")
	assert.NotContains(t, log.String(), "cpu_info", "nothing is refused")
}
