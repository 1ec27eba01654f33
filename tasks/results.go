package tasks

import (
	"io"

	"github.com/rivalbench/rival/tasks/results"
)

// The results targets: the work is in package tasks/results; here the
// workspace hands it what it needs.

// ExtractTarget is the extract target: results.Extract to out, explained on
// errOut with -v (verbose) or EXTRACT_VERBOSE.
func ExtractTarget(logfile string, verbose bool, out, errOut io.Writer) error {
	var explain io.Writer
	if verbose || processEnvironment().extractVerbose() {
		explain = errOut
	}
	return results.Extract(logfile, Version, out, explain)
}
