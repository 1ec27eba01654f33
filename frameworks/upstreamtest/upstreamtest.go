// Package upstreamtest gives tests the pinned upstream framework trees (Megatron-LM, Primus,
// Megatron-Bridge, TorchTitan) that they execute on the CPU with torch stood in. Without the trees
// a test skips, naming the one command that provides them; with RIVAL_REQUIRE_UPSTREAM=1 (CI) it
// fails instead, so a missing tree cannot pass as a skip.
package upstreamtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireEnv, set to 1, turns a missing tree or Python module into a test failure.
const RequireEnv = "RIVAL_REQUIRE_UPSTREAM"

// Enable is the command that unpacks the trees and sets the variables this package reads
// (run from the repository root; ../shared/upstream holds the archives).
const Enable = `eval "$(sh ../shared/upstream/unpack.sh /tmp/rival-upstream)"`

// Trees are the folders of one unpack (see ../shared/upstream/README.md).
type Trees struct {
	Dir            string            // RIVAL_UPSTREAM_DIR: megatron-<8 hex>, primus-<tag>, ... under it
	Megatron       string            // RIVAL_MEGATRON_TREE: the tree Megatron-Bridge pins
	Bridge         string            // RIVAL_BRIDGE_TREE
	TorchTitan     map[string]string // RIVAL_TORCHTITAN_TREES: platform → tree
	TorchTitanSpec string            // RIVAL_TORCHTITAN_TREES as set
	Python         string            // RIVAL_PREFLIGHT_PYTHON, else python3: runs the upstream code
}

// Required reports whether RIVAL_REQUIRE_UPSTREAM=1 is set.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Missing skips the test, or fails it under RIVAL_REQUIRE_UPSTREAM=1, saying why.
func Missing(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("upstreamtest: %s (%s=1 requires the pinned trees: %s)", why, RequireEnv, Enable)
	}
	t.Skipf("upstreamtest: %s; to run it: %s", why, Enable)
}

// Get returns the unpacked trees, or skips (fails under RIVAL_REQUIRE_UPSTREAM=1) when they are not
// set or not there, or when the Python that runs them lacks PyYAML or packaging.
func Get(t testing.TB) Trees {
	t.Helper()
	tr := Trees{
		Dir: os.Getenv("RIVAL_UPSTREAM_DIR"), Megatron: os.Getenv("RIVAL_MEGATRON_TREE"),
		Bridge: os.Getenv("RIVAL_BRIDGE_TREE"), TorchTitanSpec: os.Getenv("RIVAL_TORCHTITAN_TREES"),
		Python: os.Getenv("RIVAL_PREFLIGHT_PYTHON"), TorchTitan: map[string]string{},
	}
	if tr.Python == "" {
		tr.Python = "python3"
	}
	for _, kv := range strings.Split(tr.TorchTitanSpec, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			tr.TorchTitan[k] = v
		}
	}
	if tr.Dir == "" || tr.Megatron == "" || tr.Bridge == "" || len(tr.TorchTitan) == 0 {
		Missing(t, "RIVAL_UPSTREAM_DIR, RIVAL_MEGATRON_TREE, RIVAL_BRIDGE_TREE and RIVAL_TORCHTITAN_TREES name no unpacked trees")
	}
	for _, d := range append([]string{tr.Dir, tr.Megatron, tr.Bridge}, values(tr.TorchTitan)...) {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			Missing(t, "upstream tree "+d+" is not there")
		}
	}
	if out, err := exec.Command(tr.Python, "-c", "import yaml, packaging").CombinedOutput(); err != nil {
		Missing(t, tr.Python+" cannot import yaml and packaging (Debian python3-yaml, python3-packaging; or set RIVAL_PREFLIGHT_PYTHON): "+strings.TrimSpace(string(out)))
	}
	return tr
}

// Tree returns the folder of one archive under Dir (e.g. "megatron-3bec9aa9", "primus-v26.2").
func (tr Trees) Tree(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(tr.Dir, name)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "upstream tree "+p+" is not there")
	}
	return p
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// NemoPreflight is the python -c program the tests run a nemo preflight with (rival_nemo.py --check,
// which the NeMo image runs on its own packages): torch and the packages the image has are stood in
// by frameworks/facts/pystubs.py, except multistorageclient, so that Megatron reads a dataset's files
// itself, and the Megatron-Bridge and Megatron-LM trees come first on the path:
//
//	python3 -c NemoPreflight FACTS_DIR BRIDGE MEGATRON SCRIPT ARGS...
const NemoPreflight = "import runpy, sys; sys.path[:0] = [sys.argv[1]]; import pystubs; " +
	"pystubs.STUBBED = tuple(n for n in pystubs.STUBBED if n != 'multistorageclient'); pystubs.install(); " +
	"pystubs.add_trees(sys.argv[2], sys.argv[3]); sys.argv = sys.argv[4:]; runpy.run_path(sys.argv[0], run_name='__main__')"
