package compare

import (
	"fmt"
	"strings"

	"github.com/rivalbench/rival/frameworks/effective"
)

// identical says whether two groups ran the same hyperparameters on the same
// data: every setup field recorded and equal on both sides, and recorded,
// equal dataset and config fingerprints. Otherwise why names every field that
// differs ("GBS 384 vs 128") or is unrecorded. stack says how the software
// differs ("frameworks differ"); the image is built per platform, so its
// digest differing is not counted.
func identical(a, b *Group) (ok bool, why, stack string) {
	var diffs []string
	for _, f := range setupFields {
		x, y := a.Config[f], b.Config[f]
		name := fieldLabels[f]
		switch {
		case x == unknown && y == unknown:
			diffs = append(diffs, name+" not recorded")
		case x == unknown || y == unknown:
			diffs = append(diffs, fmt.Sprintf("%s %s vs %s", name, x, y))
		case strings.HasPrefix(x, "mixed: ") || strings.HasPrefix(y, "mixed: "):
			diffs = append(diffs, name+" mixed within a group")
		case x != y:
			if strings.HasSuffix(f, "fingerprint") {
				diffs = append(diffs, name+" differs")
			} else {
				diffs = append(diffs, fmt.Sprintf("%s %s vs %s", name, x, y))
			}
		}
	}
	// Gradient accumulation follows from GBS / (MBS × DP); it is named too,
	// since equal GBS at different DP accumulates differently.
	if x, y := gradAccum(a.Config), gradAccum(b.Config); x != "" && y != "" && x != y {
		diffs = append(diffs, fmt.Sprintf("GA %s vs %s", x, y))
	}
	var st []string
	if a.Config["framework"] != b.Config["framework"] {
		st = append(st, "frameworks differ")
	} else if a.Config["framework_version"] != b.Config["framework_version"] {
		st = append(st, "framework versions differ")
	}
	return len(diffs) == 0, strings.Join(diffs, ", "), strings.Join(st, ", ")
}

// fairness lists the fields that differ between groups, the fields recorded
// and equal in every group, and the fields no group recorded: unknown is not
// equal to unknown.
//
// The digest of the first samples each run trained on (sample_digest) is compared when any group
// recorded one: a row says the runs did not train on the same batches.
//
// The frameworks' effective configurations (what each built, read back by the preflight) are
// compared field by field as "effective.<field>" when any group recorded one; the differences a
// framework does not let Rival remove (effective.AllDeclared) are listed for the frameworks present.
func (s *ModelSection) fairness() {
	fields := append([]string(nil), fairnessFields...)
	recordedEffective, recordedSamples := false, false
	for _, g := range s.Groups {
		for k, v := range g.Config {
			if strings.HasPrefix(k, effectivePrefix) && v != unknown {
				recordedEffective = true
			}
		}
		if v, ok := g.Config[sampleDigestField]; ok && v != unknown {
			recordedSamples = true
		}
	}
	if recordedSamples {
		fields = append(fields, sampleDigestField)
	}
	if recordedEffective {
		fields = append(fields, effectiveFields()...)
	}
	defer func() {
		if !recordedSamples {
			s.Unrecorded = append(s.Unrecorded, "sample order")
		}
		if !recordedEffective {
			s.Unrecorded = append(s.Unrecorded, "effective configuration")
		}
		present := map[string]bool{}
		for _, g := range s.Groups {
			present[g.Config["framework"]] = true
		}
		for _, d := range effective.AllDeclared() {
			if present[d.Framework] {
				s.Declared = append(s.Declared, d)
			}
		}
	}()
	for _, f := range fields {
		vals := make([]string, len(s.Groups))
		differ, recorded := false, false
		for i, g := range s.Groups {
			vals[i] = g.Config[f]
			if vals[i] != unknown {
				recorded = true
			}
			if i > 0 && vals[i] != vals[0] || strings.HasPrefix(vals[i], "mixed: ") {
				differ = true
			}
		}
		switch {
		case !recorded:
			s.Unrecorded = append(s.Unrecorded, f)
		case differ:
			s.Fairness = append(s.Fairness, FairnessRow{Field: f, Values: vals})
		default:
			s.Identical = append(s.Identical, f)
		}
	}
}

// differsText says how one field differs between two groups without
// cutting a word: a fingerprint or digest only "differs"; short values are
// shown whole; long ones (the fsdp trainer's version) by the parts that
// differ, split at "; " and ", " ("ran single on torch 1.13.0a0 vs ran ddp
// on torch 1.13.0a0; reduce none (one process) vs reduce fp32").
func differsText(field, a, b string) string {
	if strings.HasSuffix(field, "fingerprint") || strings.HasSuffix(field, "digest") {
		return field + " differs"
	}
	if len([]rune(a)) <= 24 && len([]rune(b)) <= 24 {
		return fmt.Sprintf("%s: %s vs %s", field, a, b)
	}
	split := func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, "; ") {
			out = append(out, strings.Split(p, ", ")...)
		}
		return out
	}
	pa, pb := split(a), split(b)
	var parts []string
	for i := 0; i < max(len(pa), len(pb)); i++ {
		x, y := "", ""
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			parts = append(parts, fmt.Sprintf("%s vs %s", dashIfEmpty(x), dashIfEmpty(y)))
		}
	}
	return field + ": " + strings.Join(parts, "; ")
}
