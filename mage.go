//go:build ignore

// Zero-install bootstrap: `go run mage.go <target>` runs the targets in
// magefile.go on a machine that has only Go, no mage binary. What it does
// around mage (spellings, the target listing, "did you mean", the note while
// the targets compile) is package magecli, where it is tested.
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"runtime"

	"github.com/magefile/mage/mage"
	"github.com/magefile/mage/mg"
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
	os.Exit(run(args))
}

// run compiles the targets and then runs them, so that a compile that takes minutes (an empty
// build cache) can be announced; anything but plain targets with -v or -t is mage's own business.
func run(args []string) int {
	inv, cmd, err := mage.Parse(os.Stderr, os.Stdout, args)
	// MAGEFILE_HASHFAST runs an existing binary inside Invoke, before it would compile: mage's own path.
	if err != nil || cmd != mage.None || inv.List || inv.Help || inv.CompileOut != "" || inv.HashFast || len(inv.Args) == 0 {
		return mage.ParseAndRun(os.Stdout, os.Stderr, os.Stdin, args)
	}
	files, err := mage.Magefiles(".", runtime.GOOS, runtime.GOARCH, false)
	if err != nil || len(files) == 0 {
		return mage.ParseAndRun(os.Stdout, os.Stderr, os.Stdin, args)
	}
	exe, err := mage.ExeName("go", mg.CacheDir(), files)
	if err != nil {
		return mage.ParseAndRun(os.Stdout, os.Stderr, os.Stdin, args)
	}
	inv.Stdin, inv.Stdout, inv.Stderr = os.Stdin, os.Stdout, os.Stderr
	compile := inv
	compile.CompileOut, compile.Args = exe, nil
	stop := magecli.CompileNote(os.Stderr, magecli.NoteDelay)
	code := mage.Invoke(compile)
	stop()
	if code != 0 {
		return code
	}
	return mage.RunCompiled(inv, exe, log.New(os.Stderr, "", 0))
}
