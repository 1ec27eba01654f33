package slurm_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/slurm/slurmtest"
)

var capture = flag.Bool("capture", false, "rewrite testdata/captures from a real test cluster")

// TestCaptureFixtures records what the real client tools print for jobs in each state, the inputs of
// the parser tests. Run: go test ./slurm -run TestCaptureFixtures -capture
func TestCaptureFixtures(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to rewrite testdata/captures")
	}
	cl := slurmtest.Start(t, slurmtest.Options{Nodes: 2})
	dir := filepath.Join("testdata", "captures")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	logs := t.TempDir()
	sub := func(args ...string) string {
		out, err := cl.Command("sbatch", append([]string{"--parsable", "-o", logs + "/%j.log"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	dump := func(name, id string) {
		for _, c := range [][]string{{"scontrol", "show", "job", "-o", id}, {"squeue", "-h", "--states=all", "-j", id, "-o", "%T|%r|%N"}} {
			out, _ := cl.Command(c[0], c[1:]...).CombinedOutput()
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+"."+c[0]+".txt"), out, 0o644))
		}
	}
	ok := sub("--wrap", "echo hi")
	fail := sub("--wrap", "exit 3")
	killed := sub("--wrap", "kill -9 $$")
	time.Sleep(3 * time.Second)
	run := sub("-N2", "--wrap", "sleep 60")
	held := sub("--hold", "--wrap", "true")
	busy := sub("--wrap", "true") // waits for the two-node job
	time.Sleep(3 * time.Second)
	dump("resources", busy)
	for name, id := range map[string]string{"completed": ok, "failed": fail, "running": run, "held": held, "signalled": killed} {
		dump(name, id)
	}
	require.NoError(t, cl.Command("scancel", run).Run())
	time.Sleep(3 * time.Second)
	dump("cancelled", run)
	dump("unknown", "999999")
}
