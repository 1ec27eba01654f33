//go:build ignore

// gen writes the built log fixtures in this folder: logs assembled from each
// framework's own print statements (format strings restated in Go), with numbers from
// a fixed pseudo-random walk so the files are reproducible. Run from this folder:
//
//	go run gen.go
package main

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
)

type w struct{ b strings.Builder }

func (x *w) f(format string, a ...any) { fmt.Fprintf(&x.b, format, a...) }
func (x *w) save(name string) {
	if err := os.WriteFile(name, []byte(x.b.String()), 0o644); err != nil {
		panic(err)
	}
}

// commas formats like Python's "{:,}".
func commas(n int64) string {
	s := fmt.Sprint(n)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

// pyG formats like Python's "{:.4}" for a float that is not integral.
func pyG(v float64) string {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.4g", v)
}

func main() {
	r := rand.New(rand.NewSource(5))
	jit := func(x, frac float64) float64 { return x * (1 + frac*(r.Float64()*2-1)) }

	// --- Megatron-LM core r0.12 style run, 8 GPUs, with arguments, memory report, a
	// nan iteration and a last line cut mid-way (log truncated).
	{
		var x w
		x.f("# built fixture: Megatron-LM training.py training_log/report_memory format strings (see README.md)\n")
		x.f("using world size: 8, data-parallel size: 8, context-parallel size: 1, hierarchical context-parallel sizes: None, tensor-model-parallel size: 1, encoder-tensor-model-parallel size: 0, pipeline-model-parallel size: 1, encoder-pipeline-model-parallel size: 0\n")
		x.f("------------------------ arguments ------------------------\n")
		for _, kv := range [][2]string{{"bf16", "True"}, {"global_batch_size", "64"}, {"hidden_size", "4096"}, {"micro_batch_size", "1"}, {"num_layers", "32"}, {"seq_length", "4096"}, {"tensor_model_parallel_size", "1"}, {"train_iters", "40"}, {"world_size", "8"}} {
			x.f("  %s %s %s\n", kv[0], strings.Repeat(".", 48-len(kv[0])), kv[1])
		}
		x.f("-------------------- end of arguments ---------------------\n")
		x.f(" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 8030261248\n")
		lr := 0.0
		loss := 11.9
		for it := 1; it <= 40; it++ {
			ms := jit(5210, 0.01)
			if it == 1 {
				ms = 14890.4
			}
			lr = 3e-4 * math.Min(1, float64(it)/10)
			loss = loss*0.97 + 0.1*r.Float64()
			tflops := 58e9 * 64 * 4096 / (ms / 1000) / 8 / 1e12
			line := fmt.Sprintf(" [2025-03-0%d %02d:%02d:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |",
				1, 10, it/12, (it*5)%60, it, 40, it*64, ms, tflops, lr, 64, loss, 1.0, jit(1.2, 0.3), 0, 0)
			if it == 17 {
				line = fmt.Sprintf(" [2025-03-01 10:01:25] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: %.6E | global batch size: %5d | lm loss: nan | loss scale: %.1f | grad norm: inf | number of skipped iterations: %3d | number of nan iterations: %3d |",
					it, 40, it*64, ms, tflops, lr, 64, 1.0, 1, 1)
			}
			if it == 40 {
				line = line[:len(line)/2] // the log ends mid-line
			}
			x.f("%s\n", line)
			if it == 1 {
				for rk := 0; rk < 8; rk++ {
					x.f("[Rank %d] (after %d iterations) memory (MB) | allocated: %v | max allocated: %v | reserved: %v | max reserved: %v\n",
						rk, 1, 54250.97802734375+float64(rk), 61480.98583984375+float64(rk), 64480.0, 64480.0)
				}
			}
		}
		x.save("megatron-core-8gpu.log")
	}

	// --- Megatron-LM under torchrun --tee 3: "[defaultN]:" labels, microsecond
	// timestamps, another rank's lines and warnings interleaved.
	{
		var x w
		x.f("# built fixture: Megatron-LM iteration lines behind torchrun [defaultN]: labels, microsecond timestamps (see README.md)\n")
		for it := 1; it <= 12; it++ {
			ms := jit(812.3, 0.02)
			x.f("[default3]:[W reducer.cpp:1360] Warning: find_unused_parameters=True was specified in DDP constructor\n")
			x.f("[default7]: [2026-01-05 09:00:%02d.%06d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |\n",
				it, 123456+it, it, 12, it*16, ms, 1e-4, 16, 10.5-0.2*float64(it), 1.0, 2.5, 0, 0)
			if it%4 == 0 {
				// a lower rank that also prints (a patched trainer): ignored, counted
				x.f("[default3]: [2026-01-05 09:00:%02d.%06d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |\n",
					it, 1, it, 12, it*16, 9999.0, 1e-4, 16, 99.0, 1.0, 2.5, 0, 0)
			}
		}
		x.save("megatron-torchrun-ranks.log")
	}

	// --- Rival's own fsdp trainer: Megatron-format iteration lines.
	{
		var x w
		x.f("# built fixture: Rival fsdp trainer, Megatron-format iteration lines (see README.md)\n")
		for it := 1; it <= 20; it++ {
			x.f("[2026-11-22 10:00:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |\n",
				it, it, 100, it*8, jit(812.3, 0.01), 0.1, 3e-4, 8, 9.876543-0.05*float64(it), 1.0, 1.234, 0, 0)
		}
		x.save("rival-fsdp.log")
	}

	// --- Primus (2026 patch): loguru colours, "X (avg Y)" compute, tokens inst/harmonic,
	// memory segments last; the last-rank line echoed by rank 0 on single-node runs.
	{
		var x w
		x.f("# built fixture: Primus print_rank_last patch (2026) behind its loguru stderr sink with colours (see README.md)\n")
		pre := func(rank int) string {
			return fmt.Sprintf("[\x1b[32m20260110 08:%02d:%02d\x1b[0m][\x1b[36mrank-%d/8\x1b[0m]\x1b[1m[INFO]     \x1b[0m\x1b[1m[---------trainer.py:1432] : ", 1, 2, rank)
		}
		x.f("%s[Patch:megatron.training_log] ThroughputAverageExtension initialized with seq_len: 8192 world_size: 8 log_avg_skip_iterations: 2 log_avg_reset_interval: 1000\x1b[0m\n", pre(0))
		var sum, hsum float64
		n := 0
		for it := 1; it <= 25; it++ {
			ms := jit(13380.0, 0.01)
			if it == 1 {
				ms = 31000
			}
			tfl := 8.03e9 * 6 * 128 * 8192 / (ms / 1000) / 8 / 1e12
			tok := 128.0 * 8192 / (ms / 1000) / 8
			if it > 2 {
				n++
				sum += tfl
				hsum += 1 / tok
			}
			avgT, avgTok := tfl, tok
			if n > 0 {
				avgT, avgTok = sum/float64(n), float64(n)/hsum
			}
			used := 150.0 + r.Float64()
			line := fmt.Sprintf("[%s] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f/%.1f | compute per GPU (TFLOP/s/GPU): %.1f (avg %.1f)  | tokens/s/GPU inst/harmonic mean: %.1f/%.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d | hip mem usage/free/total/usage_ratio: %.2fGB/%.2fGB/%.2fGB/%.2f%% | rocm mem usage/free/total/usage_ratio: %.2fGB/%.2fGB/%.2fGB/%.2f%% | rank-3 rocm max mem usage/usage_ratio: %.2fGB/%.2f%%",
				"2026-01-10 08:01:02", it, 25, it*128, ms, ms, tfl, avgT, tok, avgTok, 2e-5, 128, 10.2-0.1*float64(it), 1.0, 0.9, 0, 0,
				used, 191.98-used, 191.98, used/191.98*100, used+1, 191.98-used-1, 191.98, (used+1)/191.98*100, used+2, (used+2)/191.98*100)
			x.f("%s%s\x1b[0m\n", pre(7), line)
			x.f("%s%s\x1b[0m\n", pre(7), line) // rank 0's console echo, labelled with the last rank
		}
		x.save("primus-2026-ansi.log")
	}

	// --- Primus legacy trainer with "mem usages" as the first segment.
	{
		var x w
		x.f("# built fixture: Primus legacy trainer.py with mem usages segment first (see README.md)\n")
		for it := 1; it <= 10; it++ {
			ms := jit(16601.3, 0.01)
			x.f("[20251023 12:%02d:12][rank-63/64][INFO ] [--------trainer.py:2382] :  iteration %8d/%8d | mem usages: %.4f | consumed samples: %12d | elapsed time per iteration (ms): %.1f/%.1f | throughput per GPU (TFLOP/s/GPU): %.1f/%.1f | tokens per GPU (tokens/s/GPU): %.1f/%.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |\n",
				it, it, 40000, 0.8131, it*64, ms, 17219.3, 11.9, 11.5, 246.7, 238.1, 9.997254e-06, 64, 4.447942, 1.0, 6.142, 0, 0)
		}
		x.save("primus-legacy-mem-first.log")
	}

	// --- NeMo 2.0 ProgressPrinter with Lightning's preamble.
	{
		var x w
		// ProgressPrinter prints the 0-based global step over max_steps-1.
		x.f("# built fixture: NeMo 2.0 ProgressPrinter.format_string and Lightning model summary (see README.md)\n")
		x.f("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n")
		x.f("----------------------------------------------------------------------------------------------------\n")
		x.f("distributed_backend=nccl\nAll distributed processes registered. Starting with 8 processes\n")
		x.f("  | Name   | Type     | Params | Mode \n--------------------------------------------\n0 | module | GPTModel | 8.0 B  | train\n--------------------------------------------\n8.0 B     Trainable params\n0         Non-trainable params\n8.0 B     Total params\n32,121.045Total estimated model params size (MB)\n")
		for it := 1; it <= 30; it++ {
			loss := 12.0 * math.Exp(-float64(it)/40)
			t := jit(14.61, 0.01)
			if it == 1 {
				t = 14.2
			}
			lr := 3e-4 * math.Min(1, float64(it)/10)
			x.f("Training epoch 0, iteration %d/%d | lr: %s | global_batch_size: %s | global_step: %s | reduced_train_loss: %s | train_step_timing in s: %s | consumed_samples: %s | TFLOPS_per_GPU: %s\n",
				it-1, 29, pyG(lr), pyG(128), pyG(float64(it-1)), pyG(loss), pyG(t), pyG(float64(it*128)), pyG(jit(402.4, 0.01)))
			if it%10 == 0 {
				x.f("Validation: iteration 1/5\n")
				x.f("Training epoch 0, iteration %d/%d | lr: %s | val_loss: %s | reduced_train_loss: %s | train_step_timing in s: %s | consumed_samples: %s\n",
					it-1, 29, pyG(lr), pyG(loss+0.1), pyG(loss), pyG(t), pyG(1.2e4+float64(it)))
			}
		}
		x.save("nemo2-llama-8gpu.log")
	}

	// --- Megatron-Bridge: Step Time lines on rank 0 before the iteration line, GB memory.
	{
		var x w
		x.f("# built fixture: Megatron-Bridge train_utils.training_log format strings (see README.md)\n")
		x.f(" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 8030261248\n")
		for it := 1; it <= 15; it++ {
			s := jit(14.52, 0.01)
			if it == 1 {
				s = 125.37
			}
			tf := 8.03e9 * 6 * 128 * 8192 / s / 8 / 1e12
			x.f("Step Time : %.2fs GPU utilization: %.1fMODEL_TFLOP/s/GPU\n", s, tf)
			x.f(" [2025-12-19 10:%02d:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |\n",
				49, it, it, 15, it*128, s*1000, 3e-5, 128, 12.58-0.1*float64(it), 1.0, 10.275, 0, 0)
			if it == 1 {
				x.f("[Rank 0] (after 1 iterations) memory (GB) | mem-allocated-gigabytes: 51.072 | mem-active-gigabytes: 51.072 | mem-inactive-gigabytes: 10.971 | mem-reserved-gigabytes: 216.89 | mem-max-allocated-gigabytes: 194.41 | mem-max-active-gigabytes: 195.46 | mem-max-inactive-gigabytes: 14.369 | mem-max-reserved-gigabytes: 216.89 | mem-alloc-retires: 0 | mem-allocated-count: 571\n")
			}
		}
		x.save("megatron-bridge-llama-8gpu.log")
	}

	// --- Megatron-Bridge output grepped for Step Time lines only.
	{
		var x w
		x.f("# built fixture: Megatron-Bridge Step Time lines alone, as left by grep (see README.md)\n")
		for it := 1; it <= 6; it++ {
			x.f("Step Time : %.2fs GPU utilization: %.1fMODEL_TFLOP/s/GPU\n", jit(9.09, 0.01), jit(663.5, 0.01))
		}
		x.save("megatron-bridge-steptime-only.log")
	}

	// --- TorchTitan with its logger prefix, colours, validation lines.
	{
		var x w
		x.f("# built fixture: TorchTitan MetricsProcessor.log and train.py format strings (see README.md)\n")
		p := "[rank0]:[titan] 2025-06-01 12:00:00,000 - root - INFO - "
		x.f("%sModel llama3 8B size: 8,030,261,248 total parameters\n", p)
		x.f("%sTraining starts at step 1, with local batch size 1, global batch size 8, sequence length 8192, total steps 30 (warmup 3)\n", p)
		for st := 1; st <= 30; st++ {
			if st != 1 && st%5 != 0 {
				continue
			}
			tps := jit(4376, 0.01)
			if st == 1 {
				tps = 812
			}
			tfl := 6 * 8.03e9 * tps / 1e12
			x.f("%s\x1b[31mstep: %2d  \x1b[32mloss: %7.4f  \x1b[33mgrad_norm: %7.4f  \x1b[36mmemory: %5.2fGiB(%.2f%%)  \x1b[34mtps: %s  \x1b[36mtflops: %s  \x1b[35mmfu: %.2f%%\x1b[39m\n",
				p, st, 11.8-0.2*float64(st), jit(9.6, 0.1), 48.87, 51.44, commas(int64(math.Round(tps))), fmt.Sprintf("%.2f", tfl), 100*tfl/989.4)
			if st%10 == 0 {
				x.f("%s\x1b[33mvalidate step: %2d  \x1b[32mloss: %7.4f  \x1b[36mmemory: %5.2fGiB(%.2f%%)  \x1b[34mtps: %s\x1b[39m\n", p, st, 11.0, 48.87, 51.44, commas(9000))
			}
		}
		x.save("torchtitan-llama-8gpu.log")
	}

	// --- Bad input: no iteration lines at all.
	{
		var x w
		x.f("# built fixture: a run that died before its first step\n")
		x.f("using world size: 8, data-parallel size: 8, context-parallel size: 1, tensor-model-parallel size: 1, pipeline-model-parallel size: 1\n")
		x.f("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
		x.save("no-steps.log")
	}

	// --- Megatron Core 0.19 (core_v0.19.0, 5be96267): GPTModel's constructor warns once on rank 0
	// that it is deprecated for HybridModel, through log_single_rank at WARNING; pretrain's
	// logging.basicConfig leaves the CustomHandler on the default "%(levelname)s:%(name)s:%(message)s".
	{
		var x w
		x.f("# built fixture: Megatron Core 0.19 GPTModel deprecation warning (gpt_model.py) before Megatron-LM iteration lines (see README.md)\n")
		x.f("using world size: 8, data-parallel size: 8, context-parallel size: 1, hierarchical context-parallel sizes: None, tensor-model-parallel size: 1, encoder-tensor-model-parallel size: 0, pipeline-model-parallel size: 1, encoder-pipeline-model-parallel size: 0\n")
		x.f("building GPT model ...\n")
		x.f("WARNING:megatron.core.models.gpt.gpt_model:GPTModel IS DEPRECATED. GPTModel is only accepting critical bug fixes, no new features. Please reference the migration guide `docs/user-guide/hybrid-model-migration.md` for details on how to use `HybridModel`\n")
		for it := 1; it <= 10; it++ {
			x.f(" [2026-09-01 08:00:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |\n",
				it, it, 10, it*64, jit(1650.0, 0.01), 3e-4, 64, 10.9-0.1*float64(it), 1.0, jit(3.2, 0.1), 0, 0)
		}
		x.save("megatron-core-0.19-gptmodel-deprecated.log")
	}
}
