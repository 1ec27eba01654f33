// Command probe is the entrypoint of the FROM-scratch image the docker-mode Slurm test builds: it
// prints its arguments and the rendezvous environment, then sleeps if asked to (ignoring SIGTERM if
// asked to), so the test can see what reached the container and cancel it mid-run.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if os.Getenv("PROBE_IGNORE_TERM") != "" {
		// Like a trainer stuck in a collective: only removing the container stops it.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	fmt.Printf("args=%s\n", strings.Join(os.Args[1:], " "))
	for _, k := range []string{"NODE_RANK", "PET_NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "PET_NNODES", "RIVAL_PROBE"} {
		fmt.Printf("%s=%s\n", k, os.Getenv(k))
	}
	if d, err := time.ParseDuration(os.Getenv("PROBE_SLEEP")); err == nil {
		for range int(d / (200 * time.Millisecond)) {
			fmt.Println("probe alive")
			time.Sleep(200 * time.Millisecond)
		}
	}
}
