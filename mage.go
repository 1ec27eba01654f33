//go:build ignore

// Zero-install bootstrap: `go run mage.go <target>` runs the targets in
// magefile.go on a machine that has only Go, no mage binary.
package main

import (
	"os"

	"github.com/magefile/mage/mage"
)

func main() {
	os.Args = append(os.Args[:1], spellings(os.Args[1:])...)
	os.Exit(mage.Main())
}

// spellings accepts `purge data` for purge:data: mage cannot give a target
// an optional argument.
func spellings(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "purge" && i+1 < len(args) && args[i+1] == "data" {
			out = append(out, "purge:data")
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
