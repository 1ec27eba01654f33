package tasks

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
)

// preflightExec stands in for the container: it answers the preflight launch like preflight.py does
// (failing when fail is set) and the training launch like a trainer.
type preflightExec struct {
	scriptedExecutor
	fail bool
	// effective, when set, is the preflight's read-back of what the framework built, from the
	// workload the launch carries.
	effective func(workload []byte) string
	mu        sync.Mutex
	commands  [][]string
}

func (p *preflightExec) Run(ctx context.Context, l core.Launch, maps []executor.PathMap, onLine func(string)) (executor.Info, error) {
	p.mu.Lock()
	p.commands = append(p.commands, l.Command)
	p.mu.Unlock()
	if len(l.Command) > 1 && strings.HasSuffix(l.Command[1], "/preflight/preflight.py") {
		if p.fail {
			onLine("preflight failed: megatron validate_args: AssertionError (at arguments.py:836: assert args.min_lr <= args.lr)")
			return executor.Info{ExitCode: 1}, nil
		}
		onLine(`preflight ran: {"megatron_core": "0.18.0", "megatron_tree": "/opt/Megatron-Bridge/3rdparty/Megatron-LM", "torch": "2.12.0a0", "cuda": "13.2"}`)
		if p.effective != nil {
			onLine("preflight effective: " + p.effective(l.Workload))
		}
		echoDigest(l, onLine)
		onLine("preflight ok: megatron")
		return executor.Info{}, nil
	}
	return p.scriptedExecutor.Run(ctx, l, maps, onLine)
}

// A train run starts with the launch's preflight; when it fails the run never starts, is not cached,
// and the error quotes the framework.
func TestTrainRunsPreflightFirst(t *testing.T) {
	for _, fail := range []bool{false, true} {
		w, _ := newWorkspace(t, "")
		ex := &preflightExec{scriptedExecutor: scriptedExecutor{steps: 30}, fail: fail}
		in := newTrainInputs(t, w, ex)
		in.Platform, in.Framework = hw.PlatformNVIDIA, "mega"
		in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3"}}}
		task, err := w.trainTask(in)
		require.NoError(t, err)
		err = w.runner.Run(context.Background(), task)
		require.NotEmpty(t, ex.commands)
		assert.True(t, strings.HasSuffix(ex.commands[0][1], "/preflight/preflight.py"), "the preflight runs first: %v", ex.commands[0])
		assert.Equal(t, "mega", ex.commands[0][2])
		if fail {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "preflight of train_nvd_mega_mistral-proxy_docs stopped the run before it started: megatron validate_args: AssertionError (at arguments.py:836: assert args.min_lr <= args.lr)")
			assert.Len(t, ex.commands, 1, "the training launch never starts")
			assert.Zero(t, ex.runs.Load())
		} else {
			require.NoError(t, err)
			assert.Len(t, ex.commands, 2)
			data, err := os.ReadFile(task.Outputs[0].Path)
			require.NoError(t, err)
			assert.Contains(t, string(data), `"version": "cuda 13.2, megatron_core 0.18.0, torch 2.12.0a0; built for Megatron-LM d0b3b775 (Megatron Core 0.18.0) in nvcr.io/nvidia/nemo:26.06"`,
				"the result records what the image holds and the pin")
		}
	}
}

// The preflight's read-back of what the framework built is recorded in the result; a read-back that
// differs from the workload stops the run before it starts, naming the field and both values.
func TestTrainChecksTheEffectiveConfiguration(t *testing.T) {
	for _, differ := range []bool{false, true} {
		w, _ := newWorkspace(t, "")
		ex := &preflightExec{scriptedExecutor: scriptedExecutor{steps: 30}, effective: func(workload []byte) string {
			if !differ {
				return string(workload)
			}
			var m map[string]any
			require.NoError(t, json.Unmarshal(workload, &m))
			m["norm_eps"] = 1e-6
			b, err := json.Marshal(m)
			require.NoError(t, err)
			return string(b)
		}}
		in := newTrainInputs(t, w, ex)
		in.Platform, in.Framework = hw.PlatformNVIDIA, "mega"
		in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3"}}}
		task, err := w.trainTask(in)
		require.NoError(t, err)
		err = w.runner.Run(context.Background(), task)
		if differ {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "stopped the run before it started: mega does not build Rival's workload (1 field(s)): norm_eps: the framework built 1e-06, Rival's workload is 1e-05")
			assert.Zero(t, ex.runs.Load(), "the training launch never starts")
			continue
		}
		require.NoError(t, err)
		data, err := os.ReadFile(task.Outputs[0].Path)
		require.NoError(t, err)
		var res struct {
			Effective map[string]any `json:"effective_config"`
		}
		require.NoError(t, json.Unmarshal(data, &res))
		assert.Equal(t, 1e-5, res.Effective["norm_eps"])
		assert.Equal(t, "mistral-proxy", in.Model)
		assert.Equal(t, 32000.0, res.Effective["vocab"])
	}
}
