//go:build ignore

// Zero-install bootstrap: `go run mage.go <target>` runs the targets in
// magefile.go on a machine that has only Go, no mage binary.
package main

import (
	"os"

	"github.com/magefile/mage/mage"
)

func main() {
	os.Exit(mage.Main())
}
