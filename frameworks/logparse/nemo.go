package logparse

import (
	"regexp"
	"strings"
)

// NeMo 2.0's ProgressPrinter line:
//
//	Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146
//
// Values use Python's ":.4" format (4 significant digits, "1.2e+04" for large ones);
// values that are whole numbers print as integers. Metrics are averages over the
// log interval.
var nemoProgress = regexp.MustCompile(`Training epoch (\d+), iteration (\d+)/(\d+)`)

func (p *parser) nemoLine(s string, rank int, hasRank bool) bool {
	m := nemoProgress.FindStringSubmatchIndex(s)
	if m == nil {
		return false
	}
	epoch, _ := integer(s[m[2]:m[3]])
	n, ok1 := integer(s[m[4]:m[5]])
	total, ok2 := integer(s[m[6]:m[7]])
	if !ok1 || !ok2 {
		return false
	}
	rest := s[m[1]:]
	segs := strings.Split(rest, "|")
	// A complete line ends with a "key: number" segment.
	if len(segs) > 1 {
		_, v, found := strings.Cut(segs[len(segs)-1], ": ")
		if _, _, ok := number(v); !found || !ok {
			p.stats.CutLines++
			return true
		}
	}
	st := Step{Step: n, TotalSteps: ptr(total), Epoch: ptr(epoch)}
	for _, seg := range segs {
		key, val, found := strings.Cut(seg, ": ")
		if !found {
			continue
		}
		key = strings.TrimSpace(key)
		switch key {
		case "lr":
			st.setFloat(&st.LearningRate, "learning_rate", val, 1)
		case "train_step_timing in s":
			st.setFloat(&st.StepTimeSeconds, "step_time_s", val, 1)
		case "reduced_train_loss":
			st.setFloat(&st.Loss, "loss", val, 1)
		case "grad_norm":
			st.setFloat(&st.GradNorm, "grad_norm", val, 1)
		case "global_batch_size":
			if !st.setInt(&st.GlobalBatchSize, val) {
				st.extra(key, val)
			}
		case "consumed_samples":
			st.setFloat(&st.ConsumedSamples, "consumed_samples", val, 1)
		case "TFLOPS_per_GPU", "tflops_per_gpu":
			st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", val, 1)
		default:
			st.extra(key, val)
		}
	}
	p.nemo.add(st, rank, hasRank, p.world)
	return true
}
