package logparse

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// parseAll is everything a parse gives, including what Log's JSON leaves out
// (curve, tail statistics, sources) and the trace.
func parseAll(t *testing.T, in, framework string) string {
	t.Helper()
	var trace strings.Builder
	log, err := parse(strings.NewReader(in), framework, "input", func(e Event) { fmt.Fprintf(&trace, "%+v\n", e) })
	if err != nil {
		return "error: " + err.Error() + "\n" + trace.String()
	}
	var b strings.Builder
	for _, v := range []any{log, log.Curve, log.Tail, log.Preamble.Sources, log.Tail.StepTime.Summary(), log.Tail.InvTokensPerGPU.Summary()} {
		j, err := json.Marshal(v)
		require.NoError(t, err)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String() + trace.String()
}

// viewsAgainstCopies parses in twice: once with every line handed on as a copy,
// once as views of the read buffer that are overwritten as soon as the parser is
// done with each line. A view kept beyond its line shows as a difference.
func viewsAgainstCopies(t *testing.T, in string) {
	t.Helper()
	defer func() { scribble, copyLines = nil, false }()
	for _, fw := range []string{"", Megatron, NeMo, TorchTitan, Primus, MegatronBridge, MegatronDeepSpeed} {
		scribble, copyLines = nil, true
		want := parseAll(t, in, fw)
		scribble = func(b []byte) {
			for i := range b {
				b[i] = '~'
			}
		}
		copyLines = false
		require.Equal(t, want, parseAll(t, in, fw), "framework %q", fw)
	}
}

// TestLineViewsAreNotKept: the parser reads lines as views of its read buffer
// (no copy per line); nothing it keeps may point into that buffer. Every log in
// testdata and a log of each benchmark family (past HeadSteps and the curve's
// first decimation) parse the same with the views overwritten after each line as
// with copies.
func TestLineViewsAreNotKept(t *testing.T) {
	var files []string
	for _, d := range []string{"testdata/real", "testdata/corpus", "testdata/built"} {
		m, err := filepath.Glob(d + "/*.log")
		require.NoError(t, err)
		files = append(files, m...)
	}
	for _, fl := range familyLogs {
		path := filepath.Join(t.TempDir(), fl.name+".log")
		writeFamilyLog(t, fl, path, 2<<20)
		files = append(files, path)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		t.Run(filepath.Base(f), func(t *testing.T) { viewsAgainstCopies(t, string(b)) })
	}
}

func FuzzLineViews(f *testing.F) {
	for _, s := range []string{"testdata/real/megatron-2024-issue756.log", "testdata/real/nemo2-bionemo.log",
		"testdata/built/torchtitan-llama-8gpu.log", "testdata/built/megatron-core-8gpu.log",
		"testdata/corpus/megatron-bridge-pr841-wrapped.log", "testdata/real/primus-legacy-2025.log"} {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, in string) { viewsAgainstCopies(t, in) })
}
