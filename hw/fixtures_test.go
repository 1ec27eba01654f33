package hw

import (
	"bytes"
	"encoding/csv"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The nvidia-smi fixtures under testdata/nvidia are sections cut verbatim out
// of the captures in ../../shared/fixtures/hw/nvidia (see testdata/nvidia/README.md).
// `go test ./hw -run TestNvidiaFixturesMatchCaptures -update` rewrites them;
// without -update the test checks the committed copies still match.
var update = flag.Bool("update", false, "rewrite testdata fixtures from ../../shared/fixtures")

const sharedNvidia = "../../shared/fixtures/hw/nvidia"

var nvidiaMachines = map[string]string{
	"h100-sxm": "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
	"h100-mig": "linux-x86_64__nvidia-h100-mig__590.48.01.txt",
	"h200":     "linux-x86_64__nvidia-h200__590.48.01.txt",
	"l40s":     "linux-x86_64__nvidia-l40s__595.80.txt",
}

// builtNvidiaMachines are the fixtures under testdata/nvidia-built, each built from
// the captured folder it names for a part no capture exists of (testdata/README.md
// says what was changed). They have no capture section to match, so
// TestNvidiaFixturesMatchCaptures never checks or rewrites them.
var builtNvidiaMachines = map[string]string{
	"h200-nvl": "h200",
	"gb200":    "h200",
	"b300":     "h200",
	"gb300":    "h200",
}

// nvidiaFixtureDir is the folder of an nvidia-smi fixture: testdata/nvidia for a
// capture, testdata/nvidia-built for a built one.
func nvidiaFixtureDir(machine string) string {
	if _, ok := builtNvidiaMachines[machine]; ok {
		return filepath.Join("testdata", "nvidia-built", machine)
	}
	return filepath.Join("testdata", "nvidia", machine)
}

// captureSection is one "# $ command" block of a capture file.
type captureSection struct {
	Title, Command string
	Body           []byte
}

// splitCapture cuts a capture into its sections: a line of 80 '#', a
// "# title" line, a "# $ command" line, another line of '#', then the raw
// output up to the next line of '#'. Trailing blank lines (the separator the
// capture adds) are dropped.
func splitCapture(data []byte) []captureSection {
	rule := strings.Repeat("#", 80)
	lines := strings.Split(string(data), "\n")
	var out []captureSection
	for i := 0; i+3 < len(lines); i++ {
		if lines[i] != rule || !strings.HasPrefix(lines[i+2], "# $ ") || lines[i+3] != rule {
			continue
		}
		j := i + 4
		for j < len(lines) && lines[j] != rule {
			j++
		}
		body := strings.TrimRight(strings.Join(lines[i+4:j], "\n"), "\n") + "\n"
		out = append(out, captureSection{
			Title:   strings.TrimPrefix(lines[i+1], "# "),
			Command: strings.TrimPrefix(lines[i+2], "# $ "),
			Body:    []byte(body),
		})
		i = j - 1
	}
	return out
}

func nvidiaFixtureFiles(t *testing.T, capture []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, s := range splitCapture(capture) {
		switch {
		case strings.HasPrefix(s.Title, "idle :: query-gpu"):
			files["query-gpu.csv"] = s.Body
		case s.Command == "nvidia-smi -L":
			files["list.txt"] = s.Body
		}
	}
	require.Len(t, files, 2, "capture must hold an idle --query-gpu csv section and a -L section")
	return files
}

func TestNvidiaFixturesMatchCaptures(t *testing.T) {
	// testdata/nvidia holds captures only: a built folder there would be taken for one.
	entries, err := os.ReadDir(filepath.Join("testdata", "nvidia"))
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			require.Contains(t, nvidiaMachines, e.Name(), "testdata/nvidia/%s has no capture; built fixtures go in testdata/nvidia-built", e.Name())
		}
	}
	for machine := range builtNvidiaMachines {
		require.NotContains(t, nvidiaMachines, machine, "%s is built, not cut from a capture", machine)
	}
	if _, err := os.Stat(sharedNvidia); err != nil {
		t.Skipf("shared captures not present (%v); committed fixtures are used as they are", err)
	}
	for machine, file := range nvidiaMachines {
		capture, err := os.ReadFile(filepath.Join(sharedNvidia, file))
		require.NoError(t, err)
		for name, want := range nvidiaFixtureFiles(t, capture) {
			path := filepath.Join("testdata", "nvidia", machine, name)
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, want, 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run: go test ./hw -run TestNvidiaFixturesMatchCaptures -update")
			require.True(t, bytes.Equal(want, got), "%s differs from its capture section; rerun with -update", path)
		}
	}
}

// builtNvidiaFields are the query-gpu.csv columns a built fixture may change from
// the capture it was built from: the part's name, device id, memory (total, and
// free by the same amount) and power limit. Everything else stays the capture's.
var builtNvidiaFields = map[string]bool{
	"name": true, "pci.device_id": true, "memory.total [MiB]": true, "memory.free [MiB]": true,
	"power.limit [W]": true, "enforced.power.limit [W]": true, "power.default_limit [W]": true, "power.max_limit [W]": true,
}

func TestBuiltNvidiaFixturesChangeOnlyThePart(t *testing.T) {
	readCSV := func(dir string) ([]string, []string) {
		r := csv.NewReader(bytes.NewReader(readFixtureAt(t, dir, "query-gpu.csv")))
		r.TrimLeadingSpace = true
		rows, err := r.ReadAll()
		require.NoError(t, err)
		require.Len(t, rows, 2, dir)
		return rows[0], rows[1]
	}
	for machine, from := range builtNvidiaMachines {
		t.Run(machine, func(t *testing.T) {
			header, built := readCSV(nvidiaFixtureDir(machine))
			srcHeader, src := readCSV(nvidiaFixtureDir(from))
			require.Equal(t, srcHeader, header)
			var changed []string
			for i, h := range header {
				if built[i] != src[i] {
					assert.True(t, builtNvidiaFields[h], "%s changes %s (%q -> %q)", machine, h, src[i], built[i])
					changed = append(changed, h)
				}
			}
			assert.Contains(t, changed, "name")
			assert.Contains(t, changed, "pci.device_id")
			// nvidia-smi -L names the same GPU, with the capture's UUID.
			srcName, builtName := src[slices.Index(header, "name")], built[slices.Index(header, "name")]
			wantList := strings.Replace(string(readFixtureAt(t, nvidiaFixtureDir(from), "list.txt")), ": "+srcName+" (", ": "+builtName+" (", 1)
			assert.Equal(t, wantList, string(readFixtureAt(t, nvidiaFixtureDir(machine), "list.txt")))
		})
	}
}

func readFixtureAt(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return data
}
