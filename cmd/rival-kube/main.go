// Command rival-kube is the part of Rival that talks to Kubernetes through client-go. It is a
// program of its own so that the targets (`go run mage.go ...`) compile without client-go and the
// Kubernetes API types; the targets build it on first use and speak to it in JSON (package
// kube/kubeproc, which documents the exchange).
//
//	rival-kube manifest < run.json       the run's Service and Job as YAML (kube.Manifest)
//	rival-kube connect [-context NAME]   {"cluster": NAME}: the kubeconfig's name for the cluster
//	rival-kube run [flags] < run.json    submit, follow and delete the run (kube.Cluster.Run),
//	                                     writing its log lines, status lines and outcome as JSON lines
//
// run.json is a kubespec.Run. `run` ends the run early, deleting its objects as on Ctrl-C, when
// its standard input closes or it receives SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rivalbench/rival/kube"
	"github.com/rivalbench/rival/kube/kubeproc"
	"github.com/rivalbench/rival/kube/kubespec"
)

const usage = `usage:
  rival-kube manifest < run.json
  rival-kube connect [-context NAME]
  rival-kube run [-context NAME] [-pending D] [-grace D] [-poll D] [-deadline RFC3339] [-logs-url URL] < run.json
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the program; it returns the exit status: 0, 1 with the reason on stderr, 2 for a
// command line it does not understand.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "manifest":
		return manifest(args[1:], stdin, stdout, stderr)
	case "connect":
		return connect(args[1:], stdout, stderr)
	case "run":
		return runRun(args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "rival-kube: unknown command %q\n%s", args[0], usage)
	return 2
}

// readRun reads the run from stdin: one JSON object, no field this program does not know (a
// caller built from other source).
func readRun(dec *json.Decoder) (kubespec.Run, error) {
	var r kubespec.Run
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("rival-kube: reading the run from standard input: %v", err)
	}
	return r, nil
}

func manifest(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "rival-kube manifest takes no arguments\n%s", usage)
		return 2
	}
	r, err := readRun(json.NewDecoder(stdin))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	out, err := kube.Manifest(r)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintln(stderr, "rival-kube:", err)
		return 1
	}
	return 0
}

func connect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeContext := fs.String("context", "", "kubeconfig context; empty: the current one")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return 2
	}
	_, name, err := kube.Connect(*kubeContext)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(map[string]string{"cluster": name}); err != nil {
		fmt.Fprintln(stderr, "rival-kube:", err)
		return 1
	}
	return 0
}

func runRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeContext := fs.String("context", "", "kubeconfig context; empty: the current one")
	pending := fs.Duration("pending", 0, "a run whose pods have not all started after this long is deleted; 0: no limit")
	grace := fs.Duration("grace", 30*time.Second, "how long deleting the run's objects may take once it ends")
	poll := fs.Duration("poll", 0, "how often the run's status is read; 0: one second")
	deadline := fs.String("deadline", "", "when the run times out (RFC 3339); empty: never")
	logsURL := fs.String("logs-url", "", "read container logs from URL/NAMESPACE/POD/CONTAINER instead of the API server (pods that print nothing, like KWOK's)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if *deadline != "" {
		d, err := time.Parse(time.RFC3339Nano, *deadline)
		if err != nil {
			fmt.Fprintf(stderr, "rival-kube run: -deadline %q: %v\n", *deadline, err)
			return 2
		}
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, d)
		defer stop()
	}
	dec := json.NewDecoder(stdin)
	r, err := readRun(dec)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The caller stops the run by closing stdin, or by a signal; either way it is deleted as on
	// Ctrl-C in process. A caller that dies closes stdin too.
	go func() {
		io.Copy(io.Discard, io.MultiReader(dec.Buffered(), stdin))
		cancel()
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	// With the caller gone, writing an event fails instead of killing the program mid-deletion.
	signal.Ignore(syscall.SIGPIPE)

	events := kubeproc.NewWriter(stdout)
	final, err := execute(ctx, r, *kubeContext, *pending, *poll, *grace, *logsURL, events)
	if werr := events.End(final, err); werr != nil {
		fmt.Fprintln(stderr, "rival-kube run: writing the outcome:", werr)
		return 1
	}
	return 0
}

// execute connects and runs r, as the in-process executor did.
func execute(ctx context.Context, r kubespec.Run, kubeContext string, pending, poll, grace time.Duration, logsURL string, events *kubeproc.Writer) (kubespec.Final, error) {
	client, _, err := kube.Connect(kubeContext)
	if err != nil {
		return kubespec.Final{}, err
	}
	c := &kube.Cluster{Client: client, PendingTimeout: pending, Poll: poll, Status: events.Status}
	if logsURL != "" {
		c.Logs = httpLogs(logsURL)
	}
	return c.Execute(ctx, r, grace, events.Line)
}

// httpLogs reads each container's log from URL/NAMESPACE/POD/CONTAINER.
type httpLogs string

func (u httpLogs) Logs(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, string(u)+"/"+namespace+"/"+pod+"/"+container, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, errors.New("log endpoint: " + resp.Status)
	}
	return resp.Body, nil
}
