package compare

import (
	"errors"
	"fmt"
	"sort"

	"github.com/rivalbench/rival/hw"
)

// ErrNoResults is returned by Analyze when there is nothing to compare.
var ErrNoResults = errors.New("no results to compare: train first (`go run mage.go demo` or `go run mage.go train:cpu` on any host, `go run mage.go train:run amd prim llama` on a GPU host) or point compare:dir at a folder of result JSON files")

// Analyze groups the inputs, computes every figure and every comparison.
func Analyze(inputs []Input, prices PriceTable) (*Report, error) {
	if len(inputs) == 0 {
		return nil, ErrNoResults
	}
	if prices.Prices == nil {
		prices = DefaultPrices()
	}
	rep := &Report{Prices: prices}
	byKey := map[GroupKey]*Group{}
	var order []GroupKey
	platforms := map[string]bool{}
	for i := range inputs {
		in := &inputs[i]
		rep.Inputs = append(rep.Inputs, in)
		run := evaluate(in)
		if len(run.Errors) > 0 {
			for _, e := range run.Errors {
				rep.Errors = append(rep.Errors, RunError{Source: in.Source, Name: e.Name, Detail: e.Detail})
			}
			continue
		}
		key := groupKey(in.Result)
		key.Stack = stackKey(in)
		g, ok := byKey[key]
		if !ok {
			g = &Group{Key: key, Label: shortGPU(key.GPU) + cpuName(in.Result) + " " + frameworkLabel(key.Framework) + stackLabel(in.Result) + ranPath(in.Result), ModelLabel: modelLabel(in.Result),
				stackLabel: stackLabel(in.Result)}
			byKey[key] = g
			order = append(order, key)
		}
		g.Runs = append(g.Runs, run)
		platforms[key.Platform] = true
	}
	for p := range platforms {
		rep.Platforms = append(rep.Platforms, p)
	}
	sort.Strings(rep.Platforms)
	for _, k := range order {
		g := byKey[k]
		g.compute(prices)
		rep.Groups = append(rep.Groups, g)
	}
	sort.SliceStable(rep.Groups, func(i, j int) bool {
		a, b := rep.Groups[i], rep.Groups[j]
		if a.ModelLabel != b.ModelLabel {
			return a.ModelLabel < b.ModelLabel
		}
		return a.TPS.Mean > b.TPS.Mean
	})
	disambiguate(rep.Groups)
	rep.buildModels()
	rep.warn()
	rep.History = BuildHistory(rep.Groups, DefaultHistoryThreshold)
	rep.SetTarget(0, false)
	return rep, nil
}

// warn gathers what a reader must see before trusting a figure: implausible
// prices, groups whose runs spread more than NoisyHostCV, outlier runs and
// step times left out of the statistics.
func (rep *Report) warn() {
	rep.Warnings = append(rep.Warnings, rep.Prices.Warnings...)
	for _, g := range rep.Groups {
		if cv := g.TPS.CV(); cv > NoisyHostCV {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("noisy host: the %d runs of %s spread %.1f%% (SD / mean of tokens/s/GPU), above the %.0f%% a quiet host stays within; rerun on an idle host (no other jobs, fixed clocks) or with more runs", g.TPS.N, g.Label, 100*cv, 100*NoisyHostCV))
		}
		med := median(runValues(g))
		for _, run := range g.Runs {
			if run.Outlier > 0 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("outlier run: %s of %s has %s tokens/s/GPU against the group's median %s (modified z-score %.1f, above %.1f: |x − median| > %.1f × 1.4826 × MAD); it is kept in the statistics: %s and rerun it", run.Input.Source, g.Label, num(run.TPSPerGPU, 1), num(med, 1), run.Outlier, OutlierZ, OutlierZ, outlierCause(g.Key.Platform)))
			}
			if run.DroppedSteps != "" {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %s", run.Input.Source, run.DroppedSteps))
			}
		}
	}
}

// outlierCause is where to look for what slowed or sped up one run of a
// platform: a CPU run has no GPU or node to blame, but shares its cores and
// clock with the rest of the host.
func outlierCause(platform string) string {
	if platform == hw.PlatformCPU {
		return "look for another process competing for the cores (a build, a second training run) or CPU frequency scaling (a powersave governor, thermal throttling)"
	}
	return "look for a straggler node or a throttled GPU"
}

func (rep *Report) buildModels() {
	byModel := map[string]*ModelSection{}
	var names []string
	for _, g := range rep.Groups {
		s, ok := byModel[g.Key.Model]
		if !ok {
			s = &ModelSection{Name: g.Key.Model, Label: g.ModelLabel}
			byModel[g.Key.Model] = s
			names = append(names, g.Key.Model)
		}
		s.Groups = append(s.Groups, g)
	}
	sort.Slice(names, func(i, j int) bool { return byModel[names[i]].Label < byModel[names[j]].Label })
	for _, n := range names {
		s := byModel[n]
		s.compare()
		s.fairness()
		s.parity()
		s.frameworkParity()
		rep.Models = append(rep.Models, s)
	}
}
