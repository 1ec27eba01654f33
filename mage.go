//go:build ignore

// Zero-install bootstrap: `go run mage.go <target>` runs the targets in
// magefile.go on a machine that has only Go, no mage binary.
package main

import (
	"os"
	"strings"

	"github.com/magefile/mage/mage"
)

func main() {
	os.Args = append(os.Args[:1], spellings(os.Args[1:])...)
	os.Exit(mage.Main())
}

// spellings accepts `purge data` for purge:data, `verify:result A B`
// for verify:results A B and `train:check PLATFORM` with FRAMEWORK and
// MODEL left out (mage cannot give a target optional arguments),
// and train:slurm-script, train:k8s-manifest for mage's train:slurmscript,
// train:k8smanifest (Go names have no dash).
func spellings(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "purge" && i+1 < len(args) && args[i+1] == "data":
			out = append(out, "purge:data")
			i++
		case args[i] == "train:slurm-script":
			out = append(out, "train:slurmscript")
		case args[i] == "train:k8s-manifest":
			out = append(out, "train:k8smanifest")
		case args[i] == "train:check":
			// train:check PLATFORM [FRAMEWORK [MODEL]]: what is left out is "all".
			rest := []string{}
			for j := i + 1; j < len(args) && len(rest) < 3 && !strings.Contains(args[j], ":") && !strings.HasPrefix(args[j], "-"); j++ {
				rest = append(rest, args[j])
			}
			i += len(rest)
			for len(rest) < 3 {
				rest = append(rest, "all")
			}
			out = append(append(out, "train:check"), rest...)
		case args[i] == "verify:result" && i+2 < len(args) && strings.HasSuffix(args[i+2], ".json"):
			out = append(out, "verify:results", args[i+1], args[i+2])
			i += 2
		default:
			out = append(out, args[i])
		}
	}
	return out
}
