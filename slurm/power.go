package slurm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/safefile"
)

// PowerFile is the name of a node's power samples under OutputDir/nodes/<node>/.
const PowerFile = "power.log"

// PowerInterval is the pause between two of a node's power samples.
const PowerInterval = time.Second

// PowerSample is one reading of a node's GPUs, dated by the node's clock.
type PowerSample struct {
	At time.Time
	hw.PowerSample
}

// NodePower is the power a node recorded while the job ran.
type NodePower struct {
	Node    string
	Samples []PowerSample
	Skipped int // blocks that could not be read (a query cut short when the job ended)
}

// ReadNodePower reads every node's power.log under outputDir/nodes/, parsing each sample with
// the platform's hw.ParsePowerSample. Nodes that recorded nothing are left out; a missing
// folder gives none.
func ReadNodePower(ctx context.Context, outputDir, platform string) ([]NodePower, error) {
	root := filepath.Join(outputDir, "nodes")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: read node power: %w", err)
	}
	var nodes []NodePower
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name(), PowerFile)
		// A power log grows with the run: streamed, never read whole.
		f, _, err := safefile.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("slurm: read node power: %w", err)
		}
		n, err := parseNodePower(e.Name(), platform, safefile.Reader(ctx, f))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("slurm: read node power %s: %w", path, err)
		}
		if len(n.Samples) > 0 {
			nodes = append(nodes, n)
		}
	}
	return nodes, nil
}

// ParseNodePower reads one node's power.log: "@ <epoch seconds>" lines, each followed by one
// query's output. A block whose date or output does not parse is counted in Skipped.
func ParseNodePower(node, platform string, data []byte) NodePower {
	n, _ := parseNodePower(node, platform, bytes.NewReader(data))
	return n
}

// maxPowerBlock bounds one query's output in a power log; a longer block
// (no "@ " line for megabytes) is skipped, not held.
const maxPowerBlock = 1 << 20

// parseNodePower is ParseNodePower over a stream, in memory bounded by the
// samples it keeps; its error is the stream's (a cancelled context, a
// failed read), the samples read so far kept.
func parseNodePower(node, platform string, r io.Reader) (NodePower, error) {
	n := NodePower{Node: node}
	var at time.Time
	var block bytes.Buffer
	open := false
	flush := func() {
		if !open {
			return
		}
		if s, err := hw.ParsePowerSample(platform, block.Bytes()); err == nil && !at.IsZero() {
			n.Samples = append(n.Samples, PowerSample{At: at, PowerSample: s})
		} else {
			n.Skipped++
		}
		block.Reset()
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	oversized := false
	for sc.Scan() {
		line := sc.Text()
		if stamp, ok := strings.CutPrefix(line, "@ "); ok {
			flush()
			open, at, oversized = true, epoch(strings.TrimSpace(stamp)), false
			continue
		}
		if open && !oversized {
			if block.Len()+len(line) >= maxPowerBlock {
				// Not one query's output: skip the block, hold none of it.
				oversized = true
				at = time.Time{}
				block.Reset()
				continue
			}
			block.WriteString(line)
			block.WriteByte('\n')
		}
	}
	flush()
	return n, sc.Err()
}

// epoch reads "seconds[.fraction]" since 1970 as `date +%s.%N` prints it; zero when it does not parse.
func epoch(s string) time.Time {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f > 1e11 {
		return time.Time{}
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// WindowPower summarises the samples every node dated between from and to (the measured
// steps, dated as the job's log streamed in): the mean of every GPU's readings over all nodes,
// the highest reading, the number of samples (one per node per query) and the highest memory
// in use. ok is false when no sample falls in the window.
//
// The window's dates come from the submitting host's clock and the samples' from each node's;
// they agree as far as the clocks are synchronised (NTP keeps them within milliseconds). The
// step lines are seen up to the log poll (a quarter second) after the job printed them, so a
// sample at either edge may fall on the other side of the true edge: at one sample a second,
// at most one sample per node at each end.
func WindowPower(nodes []NodePower, from, to time.Time) (avg, maxW float64, samples int, maxMem float64, ok bool) {
	var sum float64
	n := 0
	for _, node := range nodes {
		for _, s := range node.Samples {
			if s.At.Before(from) || s.At.After(to) || len(s.PowerWatts) == 0 {
				continue
			}
			samples++
			for _, w := range s.PowerWatts {
				sum += w
				n++
				maxW = max(maxW, w)
			}
			for _, m := range s.MemoryUsedMiB {
				maxMem = max(maxMem, m)
			}
		}
	}
	if n == 0 {
		return 0, 0, 0, 0, false
	}
	return sum / float64(n), maxW, samples, maxMem, true
}
