package logparse

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

var (
	// Megatron's arguments block: "  global_batch_size ............................. 128".
	// Primus and launchers put a prefix before it ("[...][rank-0/8][INFO ] [---arguments.py:12] :   seq_length ... 4096"),
	// so the name may follow any space or colon.
	// megatronArgMatch (match.go) finds it as
	// `(?:^|[\s:])([A-Za-z_][A-Za-z0-9_]*) \.{3,} (.*?)\s*$` does.
	// Primus: "ThroughputAverageExtension initialized with seq_len: 8192 world_size: 8 ..."
	primusSeqLen = regexp.MustCompile(`initialized with seq_len:\s*(\d+)`)
	// "using world size: 8, data-parallel size: 8, context-parallel size: 1, ..." is
	// read by sizeFields (match.go), as `([a-z-]+) size: (\d+)` finds its pairs.
	// "> number of parameters on (tensor, pipeline) model parallel rank (0, 0): 8030261248"
	megatronParams = regexp.MustCompile(`number of parameters on \(tensor, pipeline\) model parallel rank \((\d+)\s*,\s*(\d+)\)\s*:\s*(\d+)`)
	// Megatron's theoretical memory report: "Total number of parameters in billions: 8.03"
	megatronParamsB = regexp.MustCompile(`Total number of parameters in billions:\s*([0-9.]+)`)
	// Lightning's model summary: "8.0 B     Total params"
	lightningParams = regexp.MustCompile(`^\s*([0-9.]+)\s*([KMBT]?)\s+Total params`)
	// TorchTitan: "Model llama3 8B size: 8,030,261,248 total parameters"
	titanParams = regexp.MustCompile(`([0-9][0-9,]*) total parameters`)
	// TorchTitan: "Training starts at step 1, with local batch size 1, global batch size 8, sequence length 2048, ..."
	// and (2026) "Trainer is initialized with local batch size 160, global batch size 1280,
	// gradient accumulation steps 1, sequence length 128, total steps 10 (warmup 2)".
	titanLocalBatch  = regexp.MustCompile(`local batch size (\d+)`)
	titanGlobalBatch = regexp.MustCompile(`global batch size (\d+)`)
	titanSeqLen      = regexp.MustCompile(`sequence length (\d+)`)
	titanTotalSteps  = regexp.MustCompile(`total steps (\d+)`)
	// TorchTitan's device mesh: "Building 1-D device mesh with ['dp_shard'], [8]",
	// "Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]": dimensions of
	// 1 are left out, so the product of those listed is the GPU count.
	titanMesh = regexp.MustCompile(`device mesh with \[[^\]]*\], \[([0-9, ]+)\]`)
	// NeMo / Lightning: "All distributed processes registered. Starting with 8 processes",
	// "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8".
	lightningWorld = regexp.MustCompile(`Starting with (\d+) processes|MEMBER: \d+/(\d+)`)
)

// maxArgs bounds the Megatron arguments kept.
const maxArgs = 4096

// preambleLine picks run facts out of lines that are not steps.
func (p *parser) preambleLine(s string) {
	// Every fact line holds one of these words; most lines hold none, so they pass
	// with a few scans instead of one per fact.
	if !strings.Contains(s, "...") && !strings.Contains(s, "param") && !strings.Contains(s, "size") &&
		!strings.Contains(s, "seq_len") && !strings.Contains(s, "Starting with") && !strings.Contains(s, "MEMBER:") &&
		!strings.Contains(s, "device mesh") {
		return
	}
	switch {
	case strings.Contains(s, "..."):
		if name, value, ok := megatronArgMatch(s); ok {
			if p.pre.Args == nil {
				p.pre.Args = map[string]string{}
			}
			if len(p.pre.Args) < maxArgs {
				// copies: name and value are views of the line
				name, value = strings.Clone(name), strings.Clone(value)
				p.pre.Args[name] = value
				if _, seen := p.argAt[name]; !seen {
					p.argAt[name] = p.lineNo
				}
			}
		}
	case strings.Contains(s, "using world size:"):
		var buf [16]kv
		for _, m := range sizeFields(buf[:0], s) {
			n, ok := integer(m.val)
			if !ok {
				continue
			}
			switch m.key {
			case "world":
				p.setFact(&p.pre.WorldSize, n)
			case "data-parallel":
				p.setFact(&p.pre.DataParallel, n)
			case "context-parallel":
				p.setFact(&p.pre.ContextParallel, n)
			case "tensor-model-parallel":
				p.setFact(&p.pre.TensorParallel, n)
			case "pipeline-model-parallel":
				p.setFact(&p.pre.PipelineParallel, n)
			}
		}
	case strings.Contains(s, "number of parameters on"):
		if m := megatronParams.FindStringSubmatch(s); m != nil {
			t, _ := integer(m[1])
			pp, _ := integer(m[2])
			if n, err := strconv.ParseInt(m[3], 10, 64); err == nil && len(p.params) < maxArgs {
				p.params[[2]int{t, pp}] = n
			}
		}
	case strings.Contains(s, "parameters in billions"):
		if m := megatronParamsB.FindStringSubmatch(s); m != nil {
			if f, finite, ok := number(m[1]); ok && finite && p.billions == nil {
				p.billions = ptr(f)
			}
			p.approxParams(m[1], 1e9)
		}
	case strings.Contains(s, "Total params"):
		if m := lightningParams.FindStringSubmatch(s); m != nil {
			p.approxParams(m[1], map[string]float64{"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m[2]])
		}
	case strings.Contains(s, "total parameters"):
		if m := titanParams.FindStringSubmatch(s); m != nil {
			if n, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64); err == nil {
				p.pre.ParameterCount, p.pre.ParameterCountExact = ptr(n), true
			}
		}
	case strings.Contains(s, "local batch size"):
		for _, f := range []struct {
			re  *regexp.Regexp
			dst **int
		}{{titanLocalBatch, &p.pre.MicroBatchSize}, {titanGlobalBatch, &p.pre.GlobalBatchSize}, {titanSeqLen, &p.pre.SeqLength}, {titanTotalSteps, &p.pre.TrainIters}} {
			if m := f.re.FindStringSubmatch(s); m != nil {
				if n, ok := integer(m[1]); ok {
					p.setFact(f.dst, n)
				}
			}
		}
	case strings.Contains(s, "device mesh with"):
		if m := titanMesh.FindStringSubmatch(s); m != nil {
			world := 1
			for _, d := range strings.Split(m[1], ",") {
				n, ok := integer(strings.TrimSpace(d))
				if !ok || n <= 0 || world > 1<<20/n {
					return
				}
				world *= n
			}
			p.setFact(&p.pre.WorldSize, world)
		}
	case strings.Contains(s, "initialized with seq_len:"):
		if m := primusSeqLen.FindStringSubmatch(s); m != nil {
			if n, ok := integer(m[1]); ok {
				p.setFact(&p.pre.SeqLength, n)
			}
		}
	case strings.Contains(s, "Starting with") || strings.Contains(s, "MEMBER:"):
		if m := lightningWorld.FindStringSubmatch(s); m != nil {
			for _, g := range m[1:] {
				if n, ok := integer(g); ok {
					p.setFact(&p.pre.WorldSize, n)
				}
			}
		}
	}
}

// approxParams records a rounded parameter count unless an exact one is known.
func (p *parser) approxParams(v string, scale float64) {
	f, finite, ok := number(v)
	if !ok || !finite || p.pre.ParameterCountExact {
		return
	}
	p.pre.ParameterCount = ptr(int64(math.Round(f * scale)))
}

// setFact sets a preamble fact the first time it is printed and remembers the line.
func (p *parser) setFact(dst **int, n int) {
	if *dst == nil {
		*dst = ptr(n)
		p.factAt[dst] = fmt.Sprintf("line %d", p.lineNo)
	}
}

// finishPreamble fills facts from Megatron's arguments, the per-rank parameter counts
// and the steps themselves.
func (p *parser) finishPreamble(steps []Step) {
	pre := &p.pre
	for arg, dst := range map[string]**int{
		"world_size":                   &pre.WorldSize,
		"seq_length":                   &pre.SeqLength,
		"micro_batch_size":             &pre.MicroBatchSize,
		"global_batch_size":            &pre.GlobalBatchSize,
		"tensor_model_parallel_size":   &pre.TensorParallel,
		"pipeline_model_parallel_size": &pre.PipelineParallel,
		"context_parallel_size":        &pre.ContextParallel,
		"data_parallel_size":           &pre.DataParallel,
		"train_iters":                  &pre.TrainIters,
	} {
		if v, ok := pre.Args[arg]; ok {
			if n, ok := integer(v); ok && *dst == nil {
				*dst = ptr(n)
				p.factAt[dst] = fmt.Sprintf("line %d (argument %s)", p.argAt[arg], arg)
			}
		}
	}
	if pre.SeqLength == nil && p.actualSeq != nil {
		pre.SeqLength = ptr(*p.actualSeq)
		p.factAt[&pre.SeqLength] = fmt.Sprintf("line %d (\"actual seqlen\" of the first step)", p.actualSeqLine)
	}
	pre.Sources = map[string]string{}
	defer func() {
		for name, dst := range map[string]**int{
			"world_size": &pre.WorldSize, "seq_length": &pre.SeqLength, "micro_batch_size": &pre.MicroBatchSize,
			"global_batch_size": &pre.GlobalBatchSize, "train_iters": &pre.TrainIters,
		} {
			if at, ok := p.factAt[dst]; ok && *dst != nil {
				pre.Sources[name] = at
			}
		}
	}()
	if len(p.params) > 0 {
		var sum int64
		for _, n := range p.params {
			sum += n
		}
		// One model-parallel rank holds the whole model; several hold shards whose sum
		// counts replicated tensors (norms, shared embeddings) more than once.
		pre.ParameterCount, pre.ParameterCountExact = ptr(sum), len(p.params) == 1
		// Expert parallelism shards the experts over ranks that share one (tensor,
		// pipeline) label, so the per-rank figure is a shard of an MoE model. Megatron's
		// own total ("parameters in billions", two decimals) wins when it is above the
		// shard count by more than its rounding.
		if p.billions != nil {
			if total := *p.billions * 1e9; total-float64(sum) > 0.005e9 {
				pre.ParameterCount, pre.ParameterCountExact = ptr(int64(math.Round(total))), false
			}
		}
	}
	for _, st := range steps {
		if pre.GlobalBatchSize == nil && st.GlobalBatchSize != nil {
			pre.GlobalBatchSize = ptr(*st.GlobalBatchSize)
			p.factAt[&pre.GlobalBatchSize] = fmt.Sprintf("the step line of step %d", st.Step)
		}
		if pre.TrainIters == nil && st.TotalSteps != nil {
			pre.TrainIters = ptr(*st.TotalSteps)
			p.factAt[&pre.TrainIters] = fmt.Sprintf("the step line of step %d", st.Step)
		}
		if pre.GlobalBatchSize != nil && pre.TrainIters != nil {
			break
		}
	}
}
