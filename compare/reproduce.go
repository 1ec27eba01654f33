package compare

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
)

// DemoDataset is the dataset name the demo's results record: the sample
// corpus shipped in testdata/sample.
const DemoDataset = "sample"

// reproduceKeys are the configuration keys a result without
// provenance.config does not record, so a rerun takes their defaults.
var reproduceKeys = []string{"SEED", "LR", "MIN_LR", "WEIGHT_DECAY", "WARMUP_STEPS", "DATASET"}

// reproduce is the command that reruns a result's configuration: every
// recorded configuration key whose value differs from defaults set in front
// of the train:run target, in key order. The keys come from
// provenance.config (runs Rival launched), else from what the result
// records (training_config, parallelism_config: extracted and imported
// results); with nil defaults every recorded key is set. For a result
// without provenance.config, unrecovered says what it could not recover
// ("" when it used provenance.config).
func reproduce(r *result.Result, defaults map[string]string) (cmd, unrecovered string) {
	if strOr(r.Dataset.Name, "") == DemoDataset && platformOf(r) == hw.PlatformCPU {
		// The demo trains the shipped sample corpus, which no train target
		// uses: the demo is what reruns it.
		return "go run mage.go demo", ""
	}
	fw := strOr(r.Framework.Requested, r.Framework.Name)
	if t, ok := frameworkTargets[strings.ToLower(fw)]; ok {
		fw = t
	}
	cfg := map[string]string{}
	if r.Provenance != nil && len(r.Provenance.Config) > 0 {
		cfg = r.Provenance.Config
	} else {
		cfg, unrecovered = recordedConfig(r)
	}
	var env []string
	for k, v := range cfg {
		if d, ok := defaults[k]; ok && d == v {
			continue
		}
		env = append(env, k+"="+shellQuote(v))
	}
	sort.Strings(env)
	if len(env) > 0 {
		env = append(env, "")
	}
	return fmt.Sprintf("%sgo run mage.go train:run %s %s %s", strings.Join(env, " "), shellQuote(platformOf(r)), shellQuote(fw), shellQuote(modelKey(r))), unrecovered
}

// recordedConfig maps what a result records onto configuration keys: SL,
// GBS, MBS, PRECISION (unless assumed), TP, PP, DP, GA = GBS / (MBS × DP)
// and TRAIN_ITERS. missing names what a rerun cannot take from it.
func recordedConfig(r *result.Result) (cfg map[string]string, missing string) {
	cfg = map[string]string{}
	tc, pc := r.TrainingConfig, r.ParallelismConfig
	var miss []string
	set := func(key string, p *int) {
		if p != nil && *p > 0 {
			cfg[key] = strconv.Itoa(*p)
		} else {
			miss = append(miss, key)
		}
	}
	set("SL", tc.SequenceLength)
	set("GBS", tc.GlobalBatchSize)
	set("MBS", tc.MicroBatchSize)
	set("TP", pc.TensorParallel)
	set("PP", pc.PipelineParallel)
	set("DP", pc.DataParallel)
	set("TRAIN_ITERS", tc.TrainIters)
	if tc.Precision != "" && !tc.PrecisionAssumed {
		cfg["PRECISION"] = strings.ToLower(tc.Precision)
	} else {
		miss = append(miss, "PRECISION")
	}
	if tc.GlobalBatchSize != nil && tc.MicroBatchSize != nil && pc.DataParallel != nil && *tc.MicroBatchSize > 0 && *pc.DataParallel > 0 && *tc.GlobalBatchSize%(*tc.MicroBatchSize**pc.DataParallel) == 0 {
		cfg["GA"] = strconv.Itoa(*tc.GlobalBatchSize / (*tc.MicroBatchSize * *pc.DataParallel))
	} else {
		miss = append(miss, "GA")
	}
	if cp := pc.ContextParallel; cp != nil && *cp > 1 {
		miss = append(miss, fmt.Sprintf("CP %d (no configuration key)", *cp))
	}
	if tc.Precision == "fp8" {
		miss = append(miss, "FP8 recipe")
	}
	miss = append(miss, reproduceKeys...)
	return cfg, "built from training_config; not recorded, left at their defaults: " + strings.Join(miss, ", ")
}
