package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Job states Slurm reports (squeue %T, scontrol JobState, sacct State).
const (
	StatePending     = "PENDING"
	StateRunning     = "RUNNING"
	StateCompleting  = "COMPLETING"
	StateCompleted   = "COMPLETED"
	StateFailed      = "FAILED"
	StateCancelled   = "CANCELLED"
	StateTimeout     = "TIMEOUT"
	StateNodeFail    = "NODE_FAIL"
	StateOutOfMemory = "OUT_OF_MEMORY"
	StatePreempted   = "PREEMPTED"
	StateBootFail    = "BOOT_FAIL"
	StateDeadline    = "DEADLINE"
)

// terminal are the states a job never leaves.
var terminal = map[string]bool{
	StateCompleted: true, StateFailed: true, StateCancelled: true, StateTimeout: true,
	StateNodeFail: true, StateOutOfMemory: true, StatePreempted: true, StateBootFail: true,
	StateDeadline: true, "REVOKED": true, "SPECIAL_EXIT": true,
}

// IsTerminal reports whether a job in state s has ended.
func IsTerminal(s string) bool { return terminal[s] }

// normState reduces Slurm's spellings to the bare state: sacct prints "CANCELLED by 0", squeue may
// print a trailing "+" on some versions.
func normState(s string) string {
	s = strings.TrimSpace(s)
	// Cut at any white space, not only a blank: "0\t+" must become "0", as "0 +" does.
	if i := strings.IndexFunc(s, func(r rune) bool { return r == '+' || unicode.IsSpace(r) }); i >= 0 {
		s = s[:i]
	}
	return strings.ToUpper(s)
}

// queued is one squeue row.
type queued struct {
	State, Reason, NodeList string
}

// squeueFormat is the squeue -o format parseSqueue reads.
const squeueFormat = "%T|%r|%N"

// parseSqueue reads squeue -h -o squeueFormat output for one job; ok is false when the job is not listed.
func parseSqueue(out string) (q queued, ok bool, err error) {
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 3 {
			return q, false, fmt.Errorf("squeue line %q: want 3 '|'-separated fields (%s)", line, squeueFormat)
		}
		return queued{State: normState(f[0]), Reason: strings.TrimSpace(f[1]), NodeList: strings.TrimSpace(f[2])}, true, nil
	}
	return q, false, nil
}

// parseScontrol reads the key=value pairs of `scontrol show job -o ID`. A word without '=' continues
// the previous value (JobName and Command may hold spaces).
func parseScontrol(out string) map[string]string {
	kv := map[string]string{}
	last := ""
	for word := range strings.FieldsSeq(out) {
		k, v, ok := strings.Cut(word, "=")
		if ok && k != "" && !strings.ContainsAny(k, "()") {
			kv[k] = v
			last = k
			continue
		}
		if last != "" {
			kv[last] += " " + word
		}
	}
	return kv
}

// finalFromScontrol builds a Final from scontrol's pairs; ok is false when JobState is missing.
func finalFromScontrol(id string, kv map[string]string) (Final, bool, error) {
	state, ok := kv["JobState"]
	if !ok {
		return Final{}, false, nil
	}
	f := Final{JobID: id, State: normState(state), Reason: cleanReason(kv["Reason"]), NodeList: none(kv["NodeList"])}
	var err error
	if f.ExitCode, f.Signal, err = parseExitCode(kv["ExitCode"]); err != nil {
		return f, true, fmt.Errorf("scontrol ExitCode: %w", err)
	}
	if f.Elapsed, err = parseDuration(kv["RunTime"]); err != nil {
		return f, true, fmt.Errorf("scontrol RunTime: %w", err)
	}
	if f.State != StatePending { // a pending job's StartTime is the scheduler's forecast
		f.Start = parseTime(kv["StartTime"])
		f.End = parseTime(kv["EndTime"])
	}
	return f, true, nil
}

// sacctFields is the sacct -o list finalFromSacct reads.
const sacctFields = "JobID,State,ExitCode,NodeList,Elapsed,Start,End,Reason"

// finalFromSacct reads sacct -n -P -X -o sacctFields output; ok is false when the job has no row.
func finalFromSacct(id, out string) (Final, bool, error) {
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 8 {
			return Final{}, false, fmt.Errorf("sacct line %q: want 8 '|'-separated fields (%s)", line, sacctFields)
		}
		if f[0] != id {
			continue
		}
		fin := Final{JobID: id, State: normState(f[1]), NodeList: none(f[3]), Reason: cleanReason(f[7])}
		var err error
		if fin.ExitCode, fin.Signal, err = parseExitCode(f[2]); err != nil {
			return fin, true, fmt.Errorf("sacct ExitCode: %w", err)
		}
		if fin.Elapsed, err = parseDuration(f[4]); err != nil {
			return fin, true, fmt.Errorf("sacct Elapsed: %w", err)
		}
		fin.Start, fin.End = parseTime(f[5]), parseTime(f[6])
		return fin, true, nil
	}
	return Final{}, false, nil
}

// parseExitCode reads Slurm's "code:signal".
func parseExitCode(s string) (code, signal int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	c, sig, _ := strings.Cut(s, ":")
	if code, err = strconv.Atoi(c); err != nil || code < 0 {
		return 0, 0, fmt.Errorf("%q is not code:signal", s)
	}
	if sig != "" {
		if signal, err = strconv.Atoi(sig); err != nil || signal < 0 {
			return 0, 0, fmt.Errorf("%q is not code:signal", s)
		}
	}
	return code, signal, nil
}

// parseDuration reads Slurm's [days-][hours:]minutes:seconds (and "INVALID"/"Unknown" as zero).
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "INVALID", "Unknown", "N/A":
		return 0, nil
	}
	var days int
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q: bad day count", s)
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return 0, fmt.Errorf("%q: want [days-][hours:]minutes:seconds", s)
	}
	secs := float64(days) * 86400
	unit := []float64{1, 60, 3600}
	for i := range parts {
		p := parts[len(parts)-1-i]
		var n float64
		var err error
		if i == 0 {
			n, err = strconv.ParseFloat(p, 64) // sacct may print fractional seconds
		} else {
			var v int
			v, err = strconv.Atoi(p)
			n = float64(v)
		}
		if err != nil || !(n >= 0) {
			return 0, fmt.Errorf("%q: want [days-][hours:]minutes:seconds", s)
		}
		secs += n * unit[i]
	}
	if secs > maxDurationSeconds {
		return 0, fmt.Errorf("%q: longer than any job runs", s)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// maxDurationSeconds bounds a parsed duration (a century) so it cannot overflow time.Duration.
const maxDurationSeconds = 100 * 365 * 86400

// parseTime reads Slurm's local-time timestamps; unknown values give the zero time.
func parseTime(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(s), time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

func none(s string) string {
	s = strings.TrimSpace(s)
	if s == "(null)" || s == "None assigned" || s == "None" {
		return ""
	}
	return s
}

func cleanReason(s string) string {
	s = none(s)
	if s == "None" {
		return ""
	}
	return s
}

// Final is how a job ended, as Slurm reports it.
type Final struct {
	JobID    string
	State    string        // COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, ...
	ExitCode int           // the batch script's exit code
	Signal   int           // the signal that ended it, 0 if none
	NodeList string        // Slurm's compressed list, e.g. "gpu[01-04]"
	Nodes    []string      // NodeList expanded
	Elapsed  time.Duration // run time
	Start    time.Time     // zero when it never started
	End      time.Time
	Reason   string // Slurm's reason (NonZeroExitCode, NodeDown, BeginTime, ...); empty for none
	// FailedNodes are the job's nodes Slurm holds down, failed or drained when the job ended NODE_FAIL.
	FailedNodes []string
	Note        string // what Rival did to the job, if anything (cancelled on interrupt or pending timeout)
}
