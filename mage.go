//go:build ignore

// Zero-install bootstrap: `go run mage.go <target>` runs the targets in
// magefile.go on a machine that has only Go, no mage binary. What it does
// around mage (spellings, the target listing, "did you mean") is package
// magecli, where it is tested.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/magefile/mage/mage"
	"github.com/rivalbench/rival/magecli"
)

func main() {
	var targets []magecli.Target
	if src, err := os.ReadFile("magefile.go"); err == nil {
		targets, _ = magecli.Targets(src)
	}
	args := os.Args[1:]
	if msg, unknown := magecli.Unknown(args, targets); unknown {
		fmt.Fprint(os.Stderr, msg)
		os.Exit(2)
	}
	args = magecli.Rewrite(args, targets)
	if magecli.Listed(args) {
		var out bytes.Buffer
		code := mage.ParseAndRun(&out, os.Stderr, os.Stdin, args)
		fmt.Print(magecli.Listing(out.String(), targets))
		os.Exit(code)
	}
	os.Exit(mage.ParseAndRun(os.Stdout, os.Stderr, os.Stdin, args))
}
