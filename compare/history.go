package compare

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultHistoryThreshold is the relative change (5 %) a step from one
// software stack to the next must exceed to be called a regression or an
// improvement; HISTORY_THRESHOLD overrides it.
const DefaultHistoryThreshold = 0.05

// HistorySessionGap splits the runs of one stack on one host into batches:
// a run starting more than this long after the previous run of the same
// stack and host finished begins a new batch (the same image rerun a week
// later is a second point of the history, not more repetitions of the first).
const HistorySessionGap = 12 * time.Hour

// Step kinds: what changed between two batches of one workload.
const (
	// StepStack: same host, the recorded software stack differs.
	StepStack = "stack"
	// StepDateOnly: same host, same recorded stack; only the date differs.
	// A change here is outside the recorded stack (an unrecorded driver or
	// firmware update, host load, drift), never a software regression.
	StepDateOnly = "date only"
	// StepHost: another host with the same recorded software.
	StepHost = "host"
	// StepHostAndStack: another host and another stack: the two cannot be
	// told apart, so no software verdict is given.
	StepHostAndStack = "host and stack"
)

// Verdicts of a history step, from the ratio's 95 % interval and the
// threshold θ.
const (
	// VerdictRegression: the interval lies below 1 and the ratio below 1 − θ.
	VerdictRegression = "regression"
	// VerdictImprovement: the interval lies above 1 and the ratio above 1 + θ.
	VerdictImprovement = "improvement"
	// VerdictNoChange: the whole interval lies within 1 ± θ.
	VerdictNoChange = "no change"
	// VerdictInconclusive: none of the above (no interval, or an interval
	// reaching past 1 ± θ while holding 1): more runs are needed.
	VerdictInconclusive = "inconclusive"
)

func (s HistoryStack) key() string {
	return strings.Join([]string{s.Framework, s.FrameworkVersion, s.Image, s.PlatformStack, s.Driver, s.Hardware}, "\x00")
}

// Components are the "name version" pairs the version strings name, in
// order: "megatron_core 0.16.0", "torch 2.6.0", "cuda 13.0.2".
func (s HistoryStack) Components() map[string]string {
	out := map[string]string{}
	for _, text := range []string{s.FrameworkVersion, s.PlatformStack} {
		for _, m := range componentRE.FindAllStringSubmatch(text, -1) {
			name := strings.ToLower(m[1])
			if name == "on" || name == "for" || name == "built" || name == "ran" {
				continue
			}
			if _, ok := out[name]; !ok {
				out[name] = m[2]
			}
		}
	}
	return out
}

// componentRE reads "torch 2.6.0", "megatron_core 0.16.0", "ROCm 6.2",
// "CUDA 13.0.2" out of a recorded version string.
var componentRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9_.-]*)[ =]v?(\d+(?:\.[0-9A-Za-z+-]+)+)`)

// Short is the stack in a few words: framework version components and the
// image.
func (s HistoryStack) Short() string {
	comps := s.Components()
	var parts []string
	for _, k := range sortedKeys(comps) {
		parts = append(parts, k+" "+comps[k])
	}
	if len(parts) == 0 {
		parts = append(parts, frameworkLabel(s.Framework)+" "+clipWords(orDash(s.FrameworkVersion), 40))
	}
	if s.Image != "" {
		parts = append(parts, "image "+shortDigest(s.Image))
	} else {
		parts = append(parts, "no image")
	}
	return strings.Join(parts, ", ")
}

// BuildHistory orders each workload's runs into batches by stack, host and
// date and compares each batch with the one before it. Only workloads with
// at least two batches are kept; the result is nil when none has.
func BuildHistory(groups []*Group, threshold float64) *History {
	h := &History{Threshold: threshold}
	for _, g := range workloads(groups) {
		if s := buildSeries(g, threshold); s != nil {
			h.Series = append(h.Series, s)
		}
	}
	if len(h.Series) == 0 {
		return nil
	}
	return h
}

// workloads joins the groups that differ only in their software stack: the
// report never pools two stacks, and the history is where they meet, batch by
// batch. A joined group's label drops its stack tag.
func workloads(groups []*Group) []*Group {
	var out []*Group
	byKey := map[GroupKey]*Group{}
	for _, g := range groups {
		k := g.Key
		k.Stack = ""
		w, ok := byKey[k]
		if !ok {
			c := *g
			c.Key, c.Runs = k, append([]*Run(nil), g.Runs...)
			if g.stackTag != "" {
				c.Label = strings.Replace(c.Label, " ["+g.stackTag+"]", "", 1)
			}
			if g.stackLabel != "" {
				c.Label = strings.Replace(c.Label, g.stackLabel, "", 1)
			}
			byKey[k] = &c
			out = append(out, &c)
			continue
		}
		w.Runs = append(w.Runs, g.Runs...)
	}
	return out
}

// SetHistoryThreshold recomputes the history with another threshold
// (HISTORY_THRESHOLD, a fraction: 0.05 for 5 %).
func (r *Report) SetHistoryThreshold(threshold float64) error {
	if !finite(threshold) || threshold <= 0 || threshold >= 1 {
		return fmt.Errorf("history threshold %v: want a fraction between 0 and 1 (0.05 for 5%%)", threshold)
	}
	r.History = BuildHistory(r.Groups, threshold)
	return nil
}

// ParseHistoryThreshold reads HISTORY_THRESHOLD: "5%", "5" (percent) or
// "0.05" (a fraction below 1); "" gives DefaultHistoryThreshold.
func ParseHistoryThreshold(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultHistoryThreshold, nil
	}
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || !finite(v) {
		return 0, fmt.Errorf("HISTORY_THRESHOLD=%q: not a number; give a percentage such as 5%% (or 0.05)", s)
	}
	if pct || v >= 1 {
		v /= 100
	}
	if v <= 0 || v >= 1 {
		return 0, fmt.Errorf("HISTORY_THRESHOLD=%q: want a change between 0%% and 100%% exclusive, such as 5%%", s)
	}
	return v, nil
}

func runTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// hostOf names where a run ran: its Slurm node list, else the host name,
// else the hardware fingerprint.
func hostOf(in *Input) string {
	r := in.Result
	if r.Provenance != nil {
		if len(r.Provenance.NodeList) > 0 {
			nodes := append([]string(nil), r.Provenance.NodeList...)
			sort.Strings(nodes)
			return strings.Join(nodes, ",")
		}
		if r.Provenance.Host != "" {
			return r.Provenance.Host
		}
	}
	return "host not recorded"
}

func stackOf(in *Input) HistoryStack {
	r := in.Result
	return HistoryStack{
		Framework: r.Framework.Name, FrameworkVersion: strOr(r.Framework.Version, ""),
		Image: strOr(r.ImageDigest, ""), PlatformStack: in.PlatformStack, Driver: strOr(r.GPUInfo.DriverVersion, ""), Hardware: strOr(r.HardwareFingerprint, ""),
	}
}

func buildSeries(g *Group, threshold float64) *HistorySeries {
	type dated struct {
		run          *Run
		start, end   time.Time
		stack        HistoryStack
		host, bucket string
	}
	var runs []dated
	s := &HistorySeries{Group: g}
	for _, run := range g.Runs {
		var start, end time.Time
		ok := false
		if p := run.Input.Result.Provenance; p != nil {
			start, ok = runTime(p.StartedAt)
			if e, eok := runTime(p.FinishedAt); eok && !e.Before(start) {
				end = e
			} else {
				end = start
			}
		}
		if !ok {
			s.Undated = append(s.Undated, run.Input.Source)
			continue
		}
		st := stackOf(run.Input)
		host := hostOf(run.Input)
		runs = append(runs, dated{run: run, start: start, end: end, stack: st, host: host, bucket: st.key() + "\x01" + host})
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].start.Equal(runs[j].start) {
			return runs[i].start.Before(runs[j].start)
		}
		return runs[i].run.Input.Source < runs[j].run.Input.Source
	})
	// Batches: per stack and host, split where a run starts more than
	// HistorySessionGap after the previous one of the bucket finished.
	open := map[string]*HistoryBatch{}
	var batches []*HistoryBatch
	for _, d := range runs {
		b := open[d.bucket]
		if b == nil || d.start.Sub(b.End) > HistorySessionGap {
			b = &HistoryBatch{Stack: d.stack, Host: d.host, Start: d.start, End: d.end}
			open[d.bucket] = b
			batches = append(batches, b)
		}
		b.Runs = append(b.Runs, d.run)
		if d.end.After(b.End) {
			b.End = d.end
		}
	}
	if len(batches) < 2 {
		return nil
	}
	sort.SliceStable(batches, func(i, j int) bool { return batches[i].Start.Before(batches[j].Start) })
	for _, b := range batches {
		var tps []float64
		for _, run := range b.Runs {
			tps = append(tps, run.TPSPerGPU)
		}
		b.TPS = summarize(tps)
		b.group = &Group{Key: g.Key, Label: g.Label, ModelLabel: g.ModelLabel, Runs: b.Runs}
	}
	s.Batches = batches
	s.Label = g.ModelLabel + " · " + g.Label + " · " + g.Setup
	for i := 1; i < len(batches); i++ {
		to := batches[i]
		from := batches[i-1]
		for j := i - 1; j >= 0; j-- {
			if batches[j].Host == to.Host {
				from = batches[j]
				break
			}
		}
		s.Steps = append(s.Steps, newHistoryStep(from, to, threshold))
	}
	return s
}

// stackChanges lists what differs between two stacks. The hardware
// fingerprint counts only on one host (there it changes with the driver);
// across hosts it is part of the host difference.
func stackChanges(a, b HistoryStack, sameHost bool) []string {
	var out []string
	if a.Framework != b.Framework {
		out = append(out, fmt.Sprintf("framework %s → %s", frameworkLabel(a.Framework), frameworkLabel(b.Framework)))
	}
	if a.FrameworkVersion != b.FrameworkVersion || a.PlatformStack != b.PlatformStack {
		ca, cb := a.Components(), b.Components()
		names := map[string]bool{}
		for k := range ca {
			names[k] = true
		}
		for k := range cb {
			names[k] = true
		}
		var keys []string
		for k := range names {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := len(out)
		for _, k := range keys {
			if ca[k] != cb[k] {
				out = append(out, fmt.Sprintf("%s %s → %s", k, orNone(ca[k]), orNone(cb[k])))
			}
		}
		if len(out) == n || withoutComponents(a.FrameworkVersion) != withoutComponents(b.FrameworkVersion) {
			// From the field where they part: the fsdp trainer's versions share
			// a long script digest before "; ran ddp …" or "; ran fsdp2 …".
			v := differingCells([]string{a.FrameworkVersion, b.FrameworkVersion}, 90, false)
			out = append(out, fmt.Sprintf("framework version %q → %q", v[0], v[1]))
		}
	}
	if a.Image != b.Image {
		out = append(out, fmt.Sprintf("image %s → %s", imageName(a.Image), imageName(b.Image)))
	}
	if a.Driver != b.Driver {
		out = append(out, fmt.Sprintf("GPU driver %s → %s", orNone(a.Driver), orNone(b.Driver)))
	}
	if sameHost && a.Hardware != b.Hardware {
		out = append(out, fmt.Sprintf("hardware fingerprint %s → %s (it covers the GPU driver, power limit and clocks)", truncate(orNone(a.Hardware), 12), truncate(orNone(b.Hardware), 12)))
	}
	return out
}

func withoutComponents(s string) string { return componentRE.ReplaceAllString(s, "$1") }

func imageName(d string) string {
	if d == "" {
		return "none (host run)"
	}
	return shortDigest(d)
}

func newHistoryStep(from, to *HistoryBatch, threshold float64) HistoryStep {
	sameHost := from.Host == to.Host && from.Host != "host not recorded"
	st := HistoryStep{From: from, To: to, Changed: stackChanges(from.Stack, to.Stack, sameHost)}
	switch {
	case sameHost && len(st.Changed) == 0:
		st.Kind = StepDateOnly
	case sameHost:
		st.Kind = StepStack
	case len(st.Changed) == 0:
		st.Kind = StepHost
	default:
		st.Kind = StepHostAndStack
	}
	if !sameHost {
		st.Changed = append([]string{fmt.Sprintf("host %s → %s", from.Host, to.Host)}, st.Changed...)
	}
	st.Ratio = ratioOfMeans(to.TPS, from.TPS)
	st.Verdict, st.Why = historyVerdict(st.Ratio, threshold)
	if sameSeed(firstRun(from.group), firstRun(to.group)) {
		lp := lossParity(from.group, to.group)
		if lp.Available {
			st.Parity = &lp
		}
	}
	return st
}

// historyVerdict classifies a ratio later/earlier by its 95 % interval
// [lo, hi] and the threshold θ:
//
//	regression   hi < 1 and ratio < 1 − θ (slower beyond chance, by more than θ)
//	improvement  lo > 1 and ratio > 1 + θ
//	no change    1 − θ ≤ lo and hi ≤ 1 + θ (any change is within θ)
//	inconclusive otherwise, or without an interval: more runs are needed
func historyVerdict(r Ratio, threshold float64) (verdict, why string) {
	th := num(100*threshold, 1) + "%"
	if !r.HasCI {
		return VerdictInconclusive, "no interval: each side needs at least 2 runs that are not all equal"
	}
	lo, hi := r.Lo, r.Hi
	iv := fmt.Sprintf("the 95%% interval %s–%s", num(lo, 3), num(hi, 3))
	switch {
	case hi < 1 && r.Value < 1-threshold:
		return VerdictRegression, fmt.Sprintf("%s lies below 1 and the ratio %s is more than %s below it", iv, num(r.Value, 3), th)
	case lo > 1 && r.Value > 1+threshold:
		return VerdictImprovement, fmt.Sprintf("%s lies above 1 and the ratio %s is more than %s above it", iv, num(r.Value, 3), th)
	case lo >= 1-threshold && hi <= 1+threshold:
		return VerdictNoChange, fmt.Sprintf("%s lies within 1 ± %s", iv, th)
	}
	return VerdictInconclusive, fmt.Sprintf("%s reaches beyond 1 ± %s without deciding: more runs are needed", iv, th)
}

// Phrase says a step's verdict in words that fit its kind: only a stack
// step can be a software regression or improvement.
func (st HistoryStep) Phrase() string {
	slower := st.Ratio.Value < 1
	dir := "faster"
	if slower {
		dir = "slower"
	}
	pct := num(100*math.Abs(st.Ratio.Value-1), 1) + "% " + dir
	switch st.Kind {
	case StepStack:
		switch st.Verdict {
		case VerdictRegression:
			return "regression: " + pct
		case VerdictImprovement:
			return "improvement: " + pct
		case VerdictNoChange:
			return "no change"
		}
		return "inconclusive (" + pct + ")"
	case StepDateOnly:
		switch st.Verdict {
		case VerdictRegression, VerdictImprovement:
			return "change outside the recorded stack: " + pct + " with the same recorded stack on the same host (only the date differs), not a software " + st.Verdict
		case VerdictNoChange:
			return "no change (same recorded stack and host, only the date differs)"
		}
		return "inconclusive (" + pct + "; same recorded stack and host, only the date differs)"
	case StepHost:
		switch st.Verdict {
		case VerdictRegression, VerdictImprovement:
			return "host difference: " + pct + " on another host with the same recorded software, not a software " + st.Verdict
		case VerdictNoChange:
			return "no host difference (another host, same recorded software)"
		}
		return "inconclusive host difference (" + pct + ")"
	}
	return "not attributable: host and stack both changed (" + pct + "); compare stacks on one host"
}

// Line is a step in one line of text.
func (st HistoryStep) Line() string {
	return fmt.Sprintf("%s → %s: %s; %s", st.From.Start.Format("2006-01-02"), st.To.Start.Format("2006-01-02"), st.Phrase(), st.Ratio.String())
}

func (s *HistorySeries) index(b *HistoryBatch) int {
	for i, x := range s.Batches {
		if x == b {
			return i + 1
		}
	}
	return 0
}
