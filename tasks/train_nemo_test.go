package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// bridgeExecutor stands in for a nemo run in the NeMo image: it writes what the entry script records
// on rank 0 (the versions it finds) and prints Megatron-Bridge's log lines, in the format of the real
// Bridge log in frameworks/logparse/testdata/real/megatron-bridge-dgxc-h100.log.
type bridgeExecutor struct {
	steps    int
	ran      map[string]string
	last     core.Launch
	commands [][]string
	failPre  bool
}

func (b *bridgeExecutor) Kind() executor.Kind { return "scripted" }
func (b *bridgeExecutor) ImageDigest() string { return "" }
func (b *bridgeExecutor) Place(dirs []executor.PathMap) []executor.PathMap {
	return executor.Host{}.Place(dirs)
}
func (b *bridgeExecutor) Run(ctx context.Context, l core.Launch, maps []executor.PathMap, onLine func(string)) (executor.Info, error) {
	b.commands = append(b.commands, l.Command)
	if l.Command[len(l.Command)-1] == "--check" {
		// The preflight: rival_nemo.py --check's lines, as Bridge's validation prints them.
		onLine(`preflight ran: {"cuda": "13.0", "megatron_bridge": "0.3.0", "megatron_core": "0.16.0rc0", "torch": "2.10.0a0+nv26.02"}`)
		if b.failPre {
			onLine("preflight failed: megatron-bridge configuration: AssertionError: min_lr must be <= lr (at config.py:412: assert self.min_lr <= self.lr)")
			return executor.Info{ExitCode: 1}, nil
		}
		echoDigest(l, onLine)
		onLine("preflight ok: megatron-bridge configuration valid for 1 processes")
		return executor.Info{}, nil
	}
	b.last = l
	if b.ran != nil {
		data, err := json.Marshal(b.ran)
		if err != nil {
			return executor.Info{}, err
		}
		if err := os.WriteFile(filepath.Join(l.WorkDir, l.RanFile), data, 0o644); err != nil {
			return executor.Info{}, err
		}
	}
	onLine("rival-nemo: ran megatron-bridge 0.3.0, megatron-core 0.16.0 (unknown), transformer-engine 2.12.0, torch 2.10.0a0, CUDA 13.0")
	for i := 1; i <= b.steps; i++ {
		onLine(fmt.Sprintf("[2025-12-19 10:49:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: 3.000000E-05 | global batch size:   %3d | lm loss: %.6E | loss scale: 1.0 | grad norm: 10.275 | number of skipped iterations:   0 | number of nan iterations:   0 |",
			i, i, b.steps, i*4, 2028.9+float64(i), 4, 12.58695-float64(i)*0.01))
		onLine(fmt.Sprintf("[Rank 0] (after %d iterations) memory (GB) | mem-allocated-gigabytes: 51.072 | mem-max-allocated-gigabytes: 194.41 | mem-max-reserved-gigabytes: 216.89", i))
	}
	return executor.Info{ExitCode: 0}, nil
}

// TestTrainNemoReadsBridgeLogAndWhatRan runs train for nemo on an NVIDIA host with a Bridge log, on
// each stack: the result is built from the log read as Megatron-Bridge's, its framework version is
// what the run recorded inside the container with the pin it was checked against, and the stack is in
// the result, the run's name and its key.
func TestTrainNemoReadsBridgeLogAndWhatRan(t *testing.T) {
	for _, c := range []struct {
		setting, stack, bridge, core, commit, pinned string
	}{
		{"", "nemo:26.06", "0.5.0", "0.18.0", "d0b3b775498a8ae6870075f1a5fc32bc260aa1b3", "pinned: megatron-bridge 0.5.0 (NVIDIA-NeMo/Megatron-Bridge@fcbb6031"},
		{"previous", "nemo:26.02", "0.3.0", "0.16.0rc0", "b0cc2706ddc60d2aefd5fff346445b5c013036a8", "pinned: megatron-bridge 0.3.0 (NVIDIA-NeMo/Megatron-Bridge@21b02e0c"},
	} {
		t.Run(c.stack, func(t *testing.T) {
			w, _ := newWorkspace(t, "")
			w.env = w.env.with(map[string]string{"STACK": c.setting})
			ex := &bridgeExecutor{steps: 30, ran: map[string]string{
				"framework": "megatron-bridge", "version": c.bridge, "megatron_core": c.core,
				"megatron_core_commit": c.commit, "transformer_engine": "2.12.0",
				"torch": "2.10.0a0+nv26.02", "cuda": "13.0"}}
			in := newTrainInputs(t, w, ex)
			in.Platform, in.Framework = hw.PlatformNVIDIA, "nemo"
			stack, err := w.trainStack(in.Platform)
			require.NoError(t, err)
			in.Stack = stack
			in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Vendor: hw.VendorNVIDIA, Model: "H100 SXM"}}}
			task, err := w.trainTask(in)
			require.NoError(t, err)
			require.NoError(t, w.runner.Run(context.Background(), task))
			assert.Equal(t, "megatron-bridge", ex.last.LogFamily)
			assert.Equal(t, c.stack, task.Params["stack"], "the stack is in the run's key")
			if c.setting != "" {
				assert.Contains(t, task.ID, c.setting, "another stack's run has a name of its own")
				assert.Contains(t, task.Outputs[0].Path, "_"+c.setting)
			}

			data, err := os.ReadFile(task.Outputs[0].Path)
			require.NoError(t, err)
			require.NoError(t, result.Validate(data))
			var r result.Result
			require.NoError(t, json.Unmarshal(data, &r))
			assert.Len(t, r.StepTimes, 30)
			require.NotNil(t, r.Framework.Version)
			v := *r.Framework.Version
			assert.True(t, strings.HasPrefix(v, "megatron-bridge "+c.bridge+", cuda 13.0, megatron_core "+c.core+", megatron_core_commit "+c.commit[:8]), v)
			assert.Contains(t, v, "torch 2.10.0a0+nv26.02")
			assert.Contains(t, v, c.pinned)
			assert.Equal(t, "nemo", r.Framework.Name, "the framework keeps its name")
			assert.Equal(t, c.stack, r.Framework.Stack)
		})
	}
}

// An unknown STACK stops planning with the accepted values; cpu runs have no stack.
func TestTrainStackSetting(t *testing.T) {
	w, _ := newWorkspace(t, "")
	w.env = w.env.with(map[string]string{"STACK": "newest"})
	_, err := w.trainStack(hw.PlatformNVIDIA)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `STACK "newest": want current or previous`)
	_, err = w.trainStack(hw.PlatformCPU)
	assert.ErrorContains(t, err, "STACK", "a misspelt STACK is an error on cpu too")
	w.env = w.env.with(map[string]string{"STACK": "previous"})
	s, err := w.trainStack(hw.PlatformCPU)
	require.NoError(t, err)
	assert.Empty(t, s, "the cpu platform has one stack")
}

// A run on an image IMAGE_BASE names, not the stack's pinned one, names its stack by that image,
// so compare never pools it with runs of the pinned image.
func TestTrainImageBaseNamesTheStack(t *testing.T) {
	w, _ := newWorkspace(t, "")
	w.env = w.env.with(map[string]string{"IMAGE_BASE": "registry.example/nemo:26.08"})
	ex := &bridgeExecutor{steps: 30, ran: map[string]string{"framework": "megatron-bridge", "version": "0.6.0"}}
	in := newTrainInputs(t, w, ex)
	in.Platform, in.Framework = hw.PlatformNVIDIA, "nemo"
	in.ImageBase = w.trainImageBase(in.Platform)
	in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Vendor: hw.VendorNVIDIA, Model: "H100 SXM"}}}
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	const want = "nemo:26.08 (IMAGE_BASE; launch built for nemo:26.06)"
	assert.Equal(t, want, task.Params["stack"])
	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, want, r.Framework.Stack)
	assert.Empty(t, w.trainImageBase(hw.PlatformCPU))
}

// A nemo run starts with Bridge's own validation (the launch's preflight, rival_nemo.py --check);
// when it fails the training launch never starts and the error quotes Bridge.
func TestTrainNemoRunsPreflightFirst(t *testing.T) {
	for _, fail := range []bool{false, true} {
		w, _ := newWorkspace(t, "")
		ex := &bridgeExecutor{steps: 30, failPre: fail, ran: map[string]string{"framework": "megatron-bridge", "version": "0.3.0"}}
		in := newTrainInputs(t, w, ex)
		in.Platform, in.Framework = hw.PlatformNVIDIA, "nemo"
		in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Vendor: hw.VendorNVIDIA, Model: "H100 SXM"}}}
		task, err := w.trainTask(in)
		require.NoError(t, err)
		err = w.runner.Run(context.Background(), task)
		require.NotEmpty(t, ex.commands)
		first := ex.commands[0]
		assert.Equal(t, "--check", first[len(first)-1], "the preflight runs first: %v", first)
		assert.True(t, strings.HasSuffix(first[1], "/rival_nemo.py"), first)
		if fail {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "stopped the run before it started: megatron-bridge configuration: AssertionError: min_lr must be <= lr")
			assert.Len(t, ex.commands, 1, "the training launch never starts")
		} else {
			require.NoError(t, err)
			assert.Len(t, ex.commands, 2)
		}
	}
}

// A reused run folder may hold an earlier run's record of what ran; the run removes it before
// launching, so a run that records nothing fails instead of reporting the earlier run's versions.
func TestTrainNemoIgnoresStaleWhatRan(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ex := &bridgeExecutor{steps: 30}
	in := newTrainInputs(t, w, ex)
	in.Platform, in.Framework = hw.PlatformNVIDIA, "nemo"
	in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Vendor: hw.VendorNVIDIA, Model: "H100 SXM"}}}
	task, err := w.trainTask(in)
	require.NoError(t, err)
	runDir := w.path("OUTPUT_DIR", "runs", training.Name(in.Platform, in.Framework, in.Model, in.Dataset, in.RunIndex))
	require.NoError(t, os.MkdirAll(runDir, 0o755))
	stale := `{"framework": "megatron-bridge", "version": "0.2.0", "megatron_core": "0.15.0"}`
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "rival_nemo_ran.json"), []byte(stale), 0o644))
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err, "the earlier run's versions must not be reported")
	assert.Contains(t, err.Error(), "rival_nemo_ran.json")
	data, rerr := os.ReadFile(task.Outputs[0].Path)
	assert.True(t, os.IsNotExist(rerr), "no result: %s", data)
}

// TestTrainNemoWithoutWhatRanFails: a run that did not record what ran has no trustworthy version.
func TestTrainNemoWithoutWhatRanFails(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ex := &bridgeExecutor{steps: 30}
	in := newTrainInputs(t, w, ex)
	in.Platform, in.Framework = hw.PlatformNVIDIA, "nemo"
	in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Vendor: hw.VendorNVIDIA, Model: "H100 SXM"}}}
	task, err := w.trainTask(in)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rival_nemo_ran.json")
}
