package hw

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
