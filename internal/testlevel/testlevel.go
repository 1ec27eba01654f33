// Package testlevel decides how much of a long table test runs. The README's plain `go test ./...`
// must pass on a busy 2-core machine within go test's default 10 minutes per package, so a table
// whose every case starts PyTorch runs a few representative cases there; CI (.ci/run) sets
// RIVAL_TEST_FULL=1 and runs them all.
package testlevel

import (
	"os"
	"testing"
)

// Env is the variable that asks for every case.
const Env = "RIVAL_TEST_FULL"

// Full reports whether every case of a long table runs.
func Full() bool { return os.Getenv(Env) == "1" }

// Case skips the running (sub)test, case i of a long table, unless every case runs
// (RIVAL_TEST_FULL=1) or i is one of the representative cases named in plain. The skip names the
// variable, so a plain run says what it left out.
func Case(t testing.TB, i int, plain ...int) {
	t.Helper()
	if Full() {
		return
	}
	for _, p := range plain {
		if p == i {
			return
		}
	}
	t.Skipf("one of the cases left to the full run (%s=1, as CI sets it)", Env)
}
