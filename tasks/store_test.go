package tasks

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container/registrytest"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/store"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// storeHost is one simulated host: its own workspace and its own local cache, sharing a store.
type storeHost struct {
	w   *Workspace
	log *bytes.Buffer
}

// openHost opens a workspace at root with its own cache and the given settings.
func openHost(t *testing.T, root string, settings map[string]string) storeHost {
	t.Helper()
	require.NoError(t, os.MkdirAll(root, 0o755))
	if _, err := os.Stat(filepath.Join(root, "config.env")); err != nil {
		require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), nil, 0o644))
	}
	t.Setenv("RIVAL_CACHE", filepath.Join(root, ".cache"))
	t.Setenv("RIVAL_CONFIG", "")
	var log bytes.Buffer
	w, err := openWorkspaceWith(root, processEnvironment().with(settings), true, &log)
	require.NoError(t, err)
	return storeHost{w: w, log: &log}
}

// dockerLogin writes a Docker config holding user:password for host, as `docker login` does.
func dockerLogin(t *testing.T, host, user, password string) {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)), 0o600))
	t.Setenv("DOCKER_CONFIG", dir)
}

// sampleCorpus writes the same small corpus into a workspace, and the tokenizer as fetch leaves it.
func sampleCorpus(t *testing.T, w *Workspace) (string, data.TokenizerSpec) {
	t.Helper()
	in := filepath.Join(w.root, "sample.jsonl")
	var b strings.Builder
	// Enough documents that the test split (a fifth) holds the demo's held-out set: 8 × 128 + 1 tokens.
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, `{"text":"Sample document %d, long enough to train on for a few steps of a proxy model."}`+"\n", i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	require.NoError(t, os.MkdirAll(w.path("DATA_DIR", "tokenizers", "mistral"), 0o755))
	copyFile(t, mistralTok, filepath.Join(w.path("DATA_DIR", "tokenizers", "mistral"), "tokenizer.json"))
	tok, err := w.data().ResolveTokenizer("mistral")
	require.NoError(t, err)
	return in, tok
}

// hostRun encodes the sample and trains the demo's one-process configuration on the CPU with
// PyTorch on the host, as host A and host B each do.
func hostRun(t *testing.T, h storeHost, force bool) (encode, train *dag.Task) {
	t.Helper()
	in, tok := sampleCorpus(t, h.w)
	et := h.w.data().EncodeTask(in, tok, h.w.demoPrefix(), 0.8, nil)
	require.NoError(t, h.w.runner.Run(context.Background(), et), h.log.String())
	planned, err := h.w.demoRuns()
	require.NoError(t, err)
	r := planned[0]
	// Fewer steps than the demo's: the walkthrough proves sharing, not speed.
	values := map[string]string{"TRAIN_ITERS": "8"}
	if force {
		values["FORCE"] = "1"
	}
	cfg, err := r.Config.with("test", values)
	require.NoError(t, err)
	tt, err := h.w.trainTask(trainInputs{Run: training.Run{Platform: r.Platform, Framework: r.Framework, Model: r.Model, Dataset: r.Dataset, Variant: r.Variant,
		TrainPrefix: r.TrainPrefix, Tokenizer: tok, Encode: et, Host: hw.Host{Platform: hw.PlatformCPU}, Executor: executor.Host{}}, Config: cfg})
	require.NoError(t, err)
	return et, tt
}

func requireTorch(t *testing.T) {
	t.Helper()
	if err := checkTorch(context.Background(), hostPython); err != nil {
		if os.Getenv(registrytest.RequireEnv) == "1" {
			t.Fatalf("the two-host walkthrough trains with PyTorch: %v", err)
		}
		t.Skipf("the two-host walkthrough trains with PyTorch (apt-get install python3-torch python3-numpy libopenblas0-pthread): %v", err)
	}
}

// TestTwoHostsShareAStore is the README's walkthrough against a real registry with TLS from a CA
// the test made and htpasswd credentials read from a Docker config: host A encodes and trains;
// host B, with its own empty cache, gets the dataset from the store (no encode runs) and trains
// itself; a third workspace with neither dataset nor results compares both and proves, from the
// store alone, that they used identical inputs.
func TestTwoHostsShareAStore(t *testing.T) {
	requireTorch(t)
	withCPUFlags(t, "no-bf16.txt")
	srv := registrytest.StartServer(t, registrytest.Options{TLS: true, User: "team", Password: "pa55word"})
	dockerLogin(t, srv.Addr, "team", "pa55word")
	settings := map[string]string{"RIVAL_STORE": "oci://" + srv.Addr + "/team/rival", "RIVAL_STORE_CA": srv.CAFile, "RIVAL_NO_INSTALL": "1"}
	base := t.TempDir()

	a := openHost(t, filepath.Join(base, "host-a"), settings)
	_, ta := hostRun(t, a, false)
	require.NoError(t, a.w.runner.Run(context.Background(), ta), a.log.String())
	assert.Equal(t, "tasks: 2 run, 0 cached", a.w.runner.Summary())
	assert.Contains(t, a.log.String(), "store  encode ")
	assert.Contains(t, a.log.String(), ": pushed ")
	assert.NotContains(t, a.log.String(), "pa55word")

	b := openHost(t, filepath.Join(base, "host-b"), settings)
	eb, tb := hostRun(t, b, true)
	assert.True(t, eb.Cached(), "host B gets the encoded dataset from the store")
	assert.Equal(t, "tasks: 0 run, 1 cached", b.w.runner.Summary(), b.log.String())
	assert.Contains(t, b.log.String(), ": pulled ")
	require.NoError(t, VerifyDatasetFiles(t, b.w), "the pulled dataset is whole")
	require.NoError(t, b.w.runner.Run(context.Background(), tb), b.log.String())
	assert.Equal(t, "tasks: 1 run, 1 cached", b.w.runner.Summary())

	c := openHost(t, filepath.Join(base, "laptop"), settings)
	var ls bytes.Buffer
	require.NoError(t, c.w.StoreListTarget(context.Background(), &ls))
	assert.Equal(t, 2, strings.Count(ls.String(), "fsdp"), ls.String())
	assert.Contains(t, ls.String(), "TOKENS/S/GPU")
	ct, err := c.w.compareTask(nil)
	require.NoError(t, err)
	require.NoError(t, c.w.runner.Run(context.Background(), ct), c.log.String())
	report, err := os.ReadFile(ct.Outputs[0].Path)
	require.NoError(t, err)
	assert.Contains(t, string(report), "2 results", "compare includes every result of the store")

	var ids []string
	for _, line := range strings.Split(ls.String(), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, "store:"+f[0])
		}
	}
	require.Len(t, ids, 2)
	var out bytes.Buffer
	require.NoError(t, c.w.VerifyResults(context.Background(), ids, &out), out.String())
	assert.Contains(t, out.String(), "used identical inputs apart from the hardware")

	require.NoError(t, c.w.StorePullTarget(context.Background()))
	pulled, _ := filepath.Glob(filepath.Join(c.w.path("OUTPUT_DIR", "store"), "*.json"))
	logs, _ := filepath.Glob(filepath.Join(c.w.path("OUTPUT_DIR", "store", "logs"), "*.log"))
	assert.Len(t, pulled, 2)
	assert.Len(t, logs, 2)
}

// VerifyDatasetFiles checks the demo dataset of w as verify:data does.
func VerifyDatasetFiles(t *testing.T, w *Workspace) error {
	t.Helper()
	return w.VerifyData([]string{w.demoPrefix() + "-train", w.demoPrefix() + "-test"})
}

// TestStoreDownTheRunGoesOn: a store that refuses the credentials, is unreachable, or answers
// nothing costs one warning, and every task runs with the local cache.
func TestStoreDownTheRunGoesOn(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{User: "team", Password: "right"})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := closed.Addr().String()
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tc := range []struct {
		name, addr, password, want, timeout string
	}{
		// The registry checks a bcrypt hash per request: slow on a loaded host, so a longer bound.
		{"wrong credentials", srv.Addr, "wrong", "refused the credentials", "20s"},
		{"unreachable", dead, "", "connection refused", "500ms"},
		{"silent", silent.Addr().String(), "", "no answer within", "500ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dockerLogin(t, tc.addr, "team", tc.password)
			h := openHost(t, t.TempDir(), map[string]string{"RIVAL_STORE": "oci://" + tc.addr + "/team/rival", "RIVAL_STORE_TIMEOUT": tc.timeout})
			in, tok := sampleCorpus(t, h.w)
			var tasks []*dag.Task
			for _, name := range []string{"one", "two", "three"} {
				tasks = append(tasks, h.w.data().EncodeTask(in, tok, h.w.path("DATA_DIR", name), 0.8, nil))
			}
			require.NoError(t, h.w.runner.Run(context.Background(), tasks...))
			assert.Equal(t, "tasks: 3 run, 0 cached", h.w.runner.Summary())
			assert.Equal(t, 1, strings.Count(h.log.String(), "warning: "), h.log.String())
			assert.Contains(t, h.log.String(), tc.want)
			assert.Contains(t, h.log.String(), "going on with the local cache only")
			if tc.password != "" {
				assert.NotContains(t, h.log.String(), tc.password)
			}
		})
	}
}

// A RIVAL_STORE that is not an oci:// location stops the workspace from opening, naming the
// setting: a typo must not silently leave a team's hosts unshared.
func TestStoreSettingIsChecked(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), nil, 0o644))
	t.Setenv("RIVAL_CACHE", filepath.Join(root, ".cache"))
	_, err := openWorkspaceWith(root, processEnvironment().with(map[string]string{"RIVAL_STORE": "https://registry.example.com/team"}), false, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RIVAL_STORE")
	assert.Contains(t, err.Error(), "oci://HOST[:PORT]/REPOSITORY")
}

// TestTamperedStoreEntryRunsTheTask: a dataset blob replaced in the registry's storage is
// detected when host B pulls it; B says which entry is damaged and encodes itself, and its dataset
// is the one host A made.
func TestTamperedStoreEntryRunsTheTask(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	settings := map[string]string{"RIVAL_STORE": "oci://" + srv.Addr + "/team/rival"}
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	base := t.TempDir()
	a := openHost(t, filepath.Join(base, "a"), settings)
	in, tok := sampleCorpus(t, a.w)
	ea := a.w.data().EncodeTask(in, tok, a.w.path("DATA_DIR", "sample"), 0.8, nil)
	require.NoError(t, a.w.runner.Run(context.Background(), ea), a.log.String())

	// Every .bin blob of the registry's storage gets one byte flipped.
	bins := 0
	want, err := os.ReadFile(a.w.path("DATA_DIR", "sample-train.bin"))
	require.NoError(t, err)
	require.NoError(t, filepath.Walk(srv.Storage, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || filepath.Base(p) != "data" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(data, want) {
			return err
		}
		bins++
		data[len(data)/2] ^= 0xff
		return os.WriteFile(p, data, 0o644)
	}))
	require.Equal(t, 1, bins)

	b := openHost(t, filepath.Join(base, "b"), settings)
	in, tok = sampleCorpus(t, b.w)
	eb := b.w.data().EncodeTask(in, tok, b.w.path("DATA_DIR", "sample"), 0.8, nil)
	require.NoError(t, b.w.runner.Run(context.Background(), eb), b.log.String())
	assert.Equal(t, "tasks: 1 run, 0 cached", b.w.runner.Summary(), "the damaged entry is not used: the task runs")
	assert.Contains(t, b.log.String(), "tampered with or truncated in the store; not used")
	assert.Contains(t, b.log.String(), "sample-train.bin")
	got, err := os.ReadFile(b.w.path("DATA_DIR", "sample-train.bin"))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// TestStoreTargets runs the compiled targets as two hosts would: host A's encode:file is pushed,
// host B, with its own cache, restores it from the store without running anything, byte for
// byte; store:ls and store:pull answer from the store.
func TestStoreTargets(t *testing.T) {
	bin := rivalBinary(t)
	srv := registrytest.StartServer(t, registrytest.Options{})
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	env := []string{"EOD=2", "RIVAL_STORE=oci://" + srv.Addr + "/team/rival"}
	a, b := newSuiteWS(t, t.TempDir()), newSuiteWS(t, t.TempDir())
	a.env, b.env = env, env
	for _, ws := range []suiteWS{a, b} {
		suiteCorpus(t, ws.root, "big.jsonl", "shared", 4)
	}
	outA := a.run(t, bin, "encode:file", "big.jsonl", suiteTokenizer, "out/big")
	assert.Contains(t, outA, "tasks: 1 run, 0 cached")
	assert.Contains(t, outA, ": pushed ")
	outB := b.run(t, bin, "encode:file", "big.jsonl", suiteTokenizer, "out/big")
	assert.Contains(t, outB, "tasks: 0 run, 1 cached", "host B encodes nothing")
	assert.Contains(t, outB, ": pulled ")
	assert.Equal(t, a.dataset(t, "out/big"), b.dataset(t, "out/big"))

	ls := b.run(t, bin, "store:ls")
	assert.Contains(t, ls, "ID  PLATFORM")
	assert.Contains(t, ls, "0 results")
	assert.Contains(t, b.run(t, bin, "store:pull"), "store:pull: 0 results")
}

// TestPullOnlyHostKeepsPulling: a registry that lets a host read but refuses its pushes (a laptop
// with pull rights) costs one warning; the host still gets every entry it asks for.
func TestPullOnlyHostKeepsPulling(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	target, err := url.Parse("http://" + srv.Addr)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	readOnly := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusForbidden)
			rw.Write([]byte(`{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`))
			return
		}
		proxy.ServeHTTP(rw, req)
	}))
	t.Cleanup(readOnly.Close)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	base := t.TempDir()

	a := openHost(t, filepath.Join(base, "a"), map[string]string{"RIVAL_STORE": "oci://" + srv.Addr + "/team/rival"})
	in, tok := sampleCorpus(t, a.w)
	require.NoError(t, a.w.runner.Run(context.Background(), a.w.data().EncodeTask(in, tok, a.w.path("DATA_DIR", "shared"), 0.8, nil)))

	b := openHost(t, filepath.Join(base, "b"), map[string]string{"RIVAL_STORE": "oci://" + strings.TrimPrefix(readOnly.URL, "http://") + "/team/rival"})
	in, tok = sampleCorpus(t, b.w)
	own := b.w.data().EncodeTask(in, tok, b.w.path("DATA_DIR", "own"), 0.8, nil)
	require.NoError(t, b.w.runner.Run(context.Background(), own))
	shared := b.w.data().EncodeTask(in, tok, b.w.path("DATA_DIR", "shared"), 0.8, nil)
	require.NoError(t, b.w.runner.Run(context.Background(), shared))
	assert.Equal(t, "tasks: 1 run, 1 cached", b.w.runner.Summary(), b.log.String())
	assert.True(t, shared.Cached(), "pulled after the refused push")
	assert.Equal(t, 1, strings.Count(b.log.String(), "warning: "), b.log.String())
	assert.Contains(t, b.log.String(), "this host only pulls from the store")
}

// A store entry's listing is whatever the host that pushed it wrote: store:ls shows its escape
// sequences, carriage returns and newlines escaped, so an entry can neither clear the screen nor
// forge a line of the listing.
func TestStoreListEscapesWhatTerminalsActOn(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	settings := map[string]string{"RIVAL_STORE": "oci://" + srv.Addr + "/team/rival"}
	h := openHost(t, t.TempDir(), settings)
	loc, err := store.ParseLocation("oci://" + srv.Addr + "/team/rival")
	require.NoError(t, err)
	st, err := store.Open(context.Background(), loc, store.Options{})
	require.NoError(t, err)
	body := []byte(`{"hostile": true}`)
	d, err := h.w.cache.PutBytes(body, true)
	require.NoError(t, err)
	_, err = st.PushResult(context.Background(), h.w.cache, store.File{Name: "result", Digest: d, Size: int64(len(body))}, nil,
		map[string]string{"platform": "nvd\x1b[2J", "model": "llama\r\nabcdef123456  amd  forged", "host": "node\t7", "date": "2026-11-28T10:00:00Z"})
	require.NoError(t, err)
	var ls bytes.Buffer
	require.NoError(t, h.w.StoreListTarget(context.Background(), &ls))
	out := ls.String()
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\r")
	assert.Equal(t, 2, strings.Count(out, "\n"), "a header and one entry: %q", out)
	assert.Contains(t, out, `nvd\x1b[2J`)
	assert.Contains(t, out, `llama\r\nabcdef123456  amd  forged`)
	assert.Contains(t, out, `node\t7`)
}

// An entry under a task's key whose record names other outputs than the task makes (made up, or
// from a Rival that keys differently) is refused before a blob moves, with a warning; the task
// runs, and the store stays in use for the rest of the run.
func TestStoreEntryNotTheTasksRunsTheTask(t *testing.T) {
	srv := registrytest.StartServer(t, registrytest.Options{})
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	base := t.TempDir()
	a := openHost(t, filepath.Join(base, "a"), nil)
	in, tok := sampleCorpus(t, a.w)
	ea := a.w.data().EncodeTask(in, tok, a.w.path("DATA_DIR", "sample"), 0.8, nil)
	require.NoError(t, a.w.runner.Run(context.Background(), ea), a.log.String())
	recs, err := a.w.cache.Records()
	require.NoError(t, err)
	require.Len(t, recs, 1)

	// The store gets an entry under that key whose record holds a made-up extra output.
	rec := recs[0]
	extra, err := a.w.cache.PutBytes([]byte("not an output of encode"), false)
	require.NoError(t, err)
	rec.Outputs = append(rec.Outputs, cache.Output{Path: "extra.bin", Digest: extra, Size: int64(len("not an output of encode")), Mode: 0o644})
	loc, err := store.ParseLocation("oci://" + srv.Addr + "/team/rival")
	require.NoError(t, err)
	st, err := store.Open(context.Background(), loc, store.Options{})
	require.NoError(t, err)
	_, err = st.PushAction(context.Background(), a.w.cache, rec)
	require.NoError(t, err)

	b := openHost(t, filepath.Join(base, "b"), map[string]string{"RIVAL_STORE": "oci://" + srv.Addr + "/team/rival"})
	in, tok = sampleCorpus(t, b.w)
	eb := b.w.data().EncodeTask(in, tok, b.w.path("DATA_DIR", "sample"), 0.8, nil)
	require.NoError(t, b.w.runner.Run(context.Background(), eb), b.log.String())
	assert.Equal(t, "tasks: 1 run, 0 cached", b.w.runner.Summary(), "the foreign entry is not used: the task runs")
	assert.Contains(t, b.log.String(), "the entry is not this task's: its record holds 7 outputs and the task makes 6; refused before any blob was pulled")
	assert.NotContains(t, b.log.String(), "going on with the local cache only", "the store stays in use")
	_, err = b.w.cache.ReadBlob(extra)
	assert.Error(t, err, "the made-up output never reached host B's cache")
}
