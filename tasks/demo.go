package tasks

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rivalbench/rival/hw"
)

// DemoModel is the proxy the demo trains: Mistral's architecture and its
// Apache-2.0 tokenizer, shrunk to train in seconds on two CPU cores.
const DemoModel = "mistral-proxy"

// demoConfig shrinks the fair configuration to a CPU-sized run; every
// other key (seed, optimizer) stays as config.env says.
var demoConfig = map[string]string{
	"SL": "128", "MBS": "4", "GA": "1", "DP": "1", "TP": "1", "PP": "1", "GBS": "",
	"TRAIN_ITERS": "30", "WARMUP_STEPS": "3", "LR": "1.0e-3", "MIN_LR": "1.0e-4", "PROFILE": "0",
}

// ErrNoTorch explains how to get PyTorch for CPU training runs.
var ErrNoTorch = errors.New("training on the CPU needs python3 with PyTorch, which this machine lacks: " +
	"install it with `sudo apt-get install python3-torch python3-numpy libopenblas0-pthread` (Debian, Ubuntu) " +
	"or `pip install torch numpy`, then run the command again")

// checkTorch fails with ErrNoTorch unless python3 can import torch and numpy.
func checkTorch(ctx context.Context, python string) error {
	out, err := exec.CommandContext(ctx, python, "-c", "import torch, numpy; print(torch.__version__)").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w (%s: %s)", ErrNoTorch, python, strings.TrimSpace(lastLine(string(out))))
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Demo runs the whole pipeline on the sample corpus in testdata/sample:
// filter, encode with the bundled Mistral 7B tokenizer, verify the
// datasets, train the Mistral proxy for a few steps on the CPU, and
// compare every result there is.
func (w *Workspace) Demo(ctx context.Context) error {
	in := filepath.Join(w.Root, "testdata", "sample", "corpus.jsonl")
	filtered := w.Path("DATA_DIR", "demo", "sample-filtered.jsonl")
	ft := w.FilterTask(in, filtered, nil)
	tok, err := w.ResolveTokenizer("mistral")
	if err != nil {
		return err
	}
	prefix := w.Path("DATA_DIR", "demo", "sample-mistral")
	et := w.EncodeTask(filtered, tok, prefix, w.Config.Float("TRAIN_SPLIT"), ft)
	if err := w.Runner.Run(ctx, et); err != nil {
		return err
	}
	w.ReportFilter(ft)
	w.ReportEncode(et)
	if err := w.VerifyData([]string{prefix + "-train", prefix + "-test"}); err != nil {
		return err
	}

	cfg, err := w.Config.With("demo", demoConfig)
	if err != nil {
		return err
	}
	tt, err := w.TrainTask(TrainInputs{
		Platform: hw.PlatformCPU, Framework: "fsdp", Model: DemoModel, Dataset: "sample",
		TrainPrefix: prefix + "-train", Tokenizer: tok, Encode: et, Host: hw.Host{Platform: hw.PlatformCPU},
		Config: cfg, Executor: HostExecutor{},
	})
	if err != nil {
		return err
	}
	// PyTorch is needed only when the run is not already cached.
	if !w.Runner.IsCached(tt) {
		if err := checkTorch(ctx, "/usr/bin/python3"); err != nil {
			return err
		}
	}
	ct, err := w.CompareTask(nil, tt)
	if err != nil {
		return err
	}
	if err := w.Runner.Run(ctx, ct); err != nil {
		return err
	}
	w.Printf("demo: result %s\n", rel(w.Root, tt.Outputs[0].Path))
	w.ReportCompare(ct, w.Out)
	return nil
}
