package training

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/result"
)

// cpuDescription reads the processor's model name, its physical cores and
// its logical CPUs (hardware threads) from /proc/cpuinfo text. Cores are
// the distinct (physical id, core id) pairs; where the kernel prints no
// such ids (some virtual machines, other architectures) the logical CPUs
// stand in for them. ok is false when the text lists no processor.
func cpuDescription(cpuinfo []byte) (model string, cores, logical int, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	type core struct{ pkg, id string }
	seen := map[core]bool{}
	var cur core
	hasCore := false
	flush := func() {
		if hasCore {
			seen[cur] = true
		}
		cur, hasCore = core{}, false
	}
	for sc.Scan() {
		key, val, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "processor":
			flush()
			logical++
		case "model name":
			if model == "" {
				model = strings.Join(strings.Fields(val), " ")
			}
		case "physical id":
			cur.pkg = val
		case "core id":
			cur.id, hasCore = val, true
		}
	}
	flush()
	if logical == 0 {
		return "", 0, 0, false
	}
	if model == "" {
		model = "unknown (no model name in cpuinfo)"
	}
	cores = len(seen)
	if cores == 0 || cores > logical {
		cores = logical
	}
	return model, cores, logical, true
}

// threadsLine is the fsdp trainer's report of the threads each process used.
var threadsLine = regexp.MustCompile(`\| threads per process: (\d+) \|`)

// cpuInfo describes the CPU a run trained on (as the kernel lists it in cpuinfoPath) with its
// processes and the threads each used, as the trainer reported them in its log; nil when the
// kernel lists no processor.
func cpuInfo(cpuinfoPath string, procs int, logPath string) *result.CPUInfo {
	raw, _ := os.ReadFile(cpuinfoPath)
	model, cores, logical, ok := cpuDescription(raw)
	if !ok {
		return nil
	}
	ci := &result.CPUInfo{Model: model, Cores: cores, LogicalCPUs: logical, Processes: procs}
	if f, err := os.Open(logPath); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if m := threadsLine.FindStringSubmatch(sc.Text()); m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
					ci.ThreadsPerProcess = &n
				}
				break
			}
		}
	}
	return ci
}
