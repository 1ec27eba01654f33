package executor

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
)

// ReadEffective reads a preflight's "preflight effective: {json}" line and compares it with the
// workload (the JSON of effective.Config the launch carries; none: no comparison). It returns the
// read-back (nil when the line does not parse) and the difference as an *effective.Error.
func ReadEffective(framework string, workload []byte, line string) (*effective.Config, error) {
	got, _, err := effective.FromLines([]string{line})
	if err != nil {
		return nil, err
	}
	if len(workload) == 0 {
		return &got, nil
	}
	want, err := effective.Parse(workload)
	if err != nil {
		return &got, fmt.Errorf("the workload's configuration: %w", err)
	}
	return &got, effective.CheckAgainst(framework, got, want)
}

// DescribeRan turns the preflight's JSON of what the image holds into "key value, ..." (sorted).
func DescribeRan(j string) string {
	var m map[string]string
	if json.Unmarshal([]byte(j), &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "megatron_tree" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + m[k]
	}
	return strings.Join(parts, ", ")
}

// preflightLines keeps what a cluster job's preflight step printed: its first failure, what it read
// in the image ("preflight ran: {json}", described as on one host), its read-back of the effective
// configuration, checked against the launch's workload as on one host, and its digest of the first
// samples, checked against Rival's (core.Launch.Samples) as on one host. A read-back or digest that
// differs (or cannot be read), or an ok without a digest while Rival holds one, calls stop, which
// ends the job: it must not train another workload or unchecked samples.
type preflightLines struct {
	framework string
	workload  []byte
	want      *core.SampleDigest
	wantHeld  *core.SampleDigest // the held-out set's, for the frameworks that evaluate it
	stop      func()

	failed, ran string
	effective   *effective.Config
	samples     *core.SampleDigest
	heldOut     *core.SampleDigest
	mismatch    error // the read-back or a digest differs, or does not parse
}

// newPreflightLines follows the preflight of launch; stop ends the job.
func newPreflightLines(launch core.Launch, stop func()) *preflightLines {
	p := &preflightLines{framework: launch.Framework, workload: launch.Workload, want: launch.Samples, stop: stop}
	if launch.Evaluation != "" {
		p.wantHeld = launch.HeldOut
	}
	return p
}

func (p *preflightLines) see(l string) {
	if msg, ok := strings.CutPrefix(l, "preflight failed: "); ok && p.failed == "" {
		p.failed = msg
	}
	if j, ok := strings.CutPrefix(l, "preflight ran: "); ok && p.ran == "" {
		p.ran = DescribeRan(j)
	}
	if p.mismatch != nil {
		return
	}
	if strings.HasPrefix(l, effective.LinePrefix) && p.effective == nil {
		p.effective, p.mismatch = ReadEffective(p.framework, p.workload, l)
	}
	if j, ok := strings.CutPrefix(l, SamplesPrefix); ok && p.samples == nil {
		got, err := ReadSamples(j)
		if err == nil {
			err = CompareSamples(p.want, got)
		}
		if p.mismatch = err; err == nil {
			p.samples = got
		}
	}
	if j, ok := strings.CutPrefix(l, HeldOutPrefix); ok && p.heldOut == nil && p.mismatch == nil {
		got, err := ReadHeldOut(j)
		if err == nil {
			err = CompareHeldOut(p.wantHeld, got)
		}
		if p.mismatch = err; err == nil {
			p.heldOut = got
		}
	}
	// The preflight digests before it says ok: an ok without a digest is a data path left unchecked.
	if strings.HasPrefix(l, "preflight ok: ") && p.mismatch == nil {
		if p.samples == nil {
			p.mismatch = CompareSamples(p.want, nil)
		} else if p.heldOut == nil {
			p.mismatch = CompareHeldOut(p.wantHeld, nil)
		}
	}
	if p.mismatch != nil && p.stop != nil {
		p.stop()
	}
}
