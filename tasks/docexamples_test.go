package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/container/registrytest"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/internal/docexamples"
	"github.com/rivalbench/rival/magecli"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/slurm"
	"github.com/rivalbench/rival/tasks/executor"
)

// The docs examples test: every command line of README.md and docs/*.md that runs Rival (a shell
// code block line or an inline code span, docexamples.Extract) is checked against magefile.go's
// targets and arguments, the settings and config.env's keys; those a CPU-only machine without
// network can run are then run as written, in page order, through runIn (Main's door without its
// exit) in one workspace: a checkout in a temporary folder, its source linked to the repository's
// and its config.env a copy. The demo trains with the scripted trainer, the team's registry is a
// local one (container/registrytest), image:push builds the platform image through the local
// Docker daemon on a small stand-in base (IMAGE_BASE, docPushSetup) instead of a GPU framework
// image, and mage's own flags run on the compiled targets. The examples that need GPUs, a cluster
// of them or the internet match a reason in docStaticOnly and are only checked; an example of a page is named page:line (check/README.md:25, run/README.md:25).

// docStaticOnly are the reasons an example is only checked, not run. Every entry must match an
// example: a reason no example needs any more fails the test, so the list stays short and true.
var docStaticOnly = []struct {
	why   string
	match func(c magecli.Call) bool
}{
	{"trains on AMD or NVIDIA GPUs, or hands the run to a Slurm or Kubernetes cluster of them, in the platform image",
		func(c magecli.Call) bool {
			switch c.Target.Name {
			case "train:amd", "train:nvd":
				return true
			case "train:run", "train:check":
				return c.Args[0] != hw.PlatformCPU
			}
			return false
		}},
	{"the IDs stand for two results of the team's store; TestTwoHostsShareAStore verifies two store results by the IDs store:ls prints (with PyTorch and a registry)",
		func(c magecli.Call) bool {
			return c.Target.Name == "verify:results" && strings.HasPrefix(c.Args[0], "store:")
		}},
}

// docTarget is how magefile.go runs one target: the Workspace method (or tasks function) its
// body calls, checked against magefile.go, and the same call.
type docTarget struct {
	calls string
	bare  bool // tasks.Bare: no workspace (extract)
	run   func(ctx context.Context, w *Workspace, args []string, verbose bool) error
}

// docTargets are the targets the examples run. A target an example runs must be here.
var docTargets = map[string]docTarget{
	"demo":            {calls: "Demo", run: func(ctx context.Context, w *Workspace, _ []string, _ bool) error { return w.Demo(ctx) }},
	"compare":         {calls: "CompareTarget", run: func(ctx context.Context, w *Workspace, _ []string, _ bool) error { return w.CompareTarget(ctx, nil) }},
	"compare:all":     {calls: "CompareTarget", run: func(ctx context.Context, w *Workspace, _ []string, _ bool) error { return w.CompareTarget(ctx, nil) }},
	"compare:history": {calls: "HistoryTarget", run: func(ctx context.Context, w *Workspace, _ []string, _ bool) error { return w.HistoryTarget(ctx, nil) }},
	"train:slurm-script": {calls: "SlurmScriptTarget", run: func(ctx context.Context, w *Workspace, a []string, _ bool) error {
		return w.SlurmScriptTarget(ctx, a[0], a[1], a[2])
	}},
	"train:k8s-manifest": {calls: "KubeManifestTarget", run: func(ctx context.Context, w *Workspace, a []string, _ bool) error {
		return w.KubeManifestTarget(ctx, a[0], a[1], a[2])
	}},
	"store:ls": {calls: "StoreListTarget", run: func(ctx context.Context, w *Workspace, _ []string, _ bool) error {
		return w.StoreListTarget(ctx, os.Stdout)
	}},
	"image:push": {calls: "ImagePushTarget", run: func(ctx context.Context, w *Workspace, a []string, _ bool) error {
		return w.ImagePushTarget(ctx, a[0], a[1])
	}},
	"store:pull": {calls: "StorePullTarget", run: func(ctx context.Context, w *Workspace, _ []string, _ bool) error { return w.StorePullTarget(ctx) }},
	"extract": {calls: "ExtractTarget", bare: true, run: func(_ context.Context, _ *Workspace, a []string, verbose bool) error {
		return ExtractTarget(a[0], verbose, os.Stdout, os.Stderr)
	}},
}

// docOtherVariables are the environment variables an example may set besides settingSpecs and
// configKeys (settings.go lists why each is read elsewhere); PRICE_<GPU> are compare's prices.
var docOtherVariables = map[string]bool{"RIVAL_CACHE": true, "HF_ENDPOINT": true, "HF_TOKEN": true}

// docFixtures are files an example names as the user's own, and what stands in for them.
var docFixtures = map[string]string{
	"train.log": "frameworks/logparse/testdata/built/megatron-bridge-llama-8gpu.log",
}

// docOwnFiles are what the examples write or a user keeps in a checkout beside its source: the
// workspace has its own, not the repository's.
var docOwnFiles = map[string]bool{".git": true, "output": true, "data": true, "config.env": true, "secrets.env": true, "mage_output_file.go": true}

// docGated are the targets whose run waits for the variable CI sets, and why.
var docGated = map[string]struct{ env, why string }{
	"train:k8s-manifest": {"RIVAL_REQUIRE_K8S", "builds the Kubernetes client (cmd/rival-kube, with client-go) on first use, about 3 minutes on 2 cores"},
}

// docRegistryHost is the registry the examples name for the team's; the test's own registry
// takes its place.
const docRegistryHost = "registry.example.com:5000"

type docExample struct {
	docexamples.Example
	cmd    magecli.Command
	static string // why it is only checked; "" when it runs
}

// mageFlag says whether the example runs one of mage's own flags, -l or -compile, which only the
// compiled targets answer.
func (ex docExample) mageFlag() bool {
	_, l := ex.cmd.Flags["-l"]
	_, compile := ex.cmd.Flags["-compile"]
	return l || compile
}

func TestDocExamples(t *testing.T) {
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(repo, "magefile.go"))
	require.NoError(t, err)
	targets, err := magecli.Targets(src)
	require.NoError(t, err)
	checkDocTargets(t, src, targets)

	pages, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	require.NoError(t, err)
	pages = append([]string{filepath.Join(repo, "README.md")}, pages...)
	var all []docExample
	var problems [][]string
	used := make([]bool, len(docStaticOnly))
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		rel, _ := filepath.Rel(repo, page)
		exs, bad := docexamples.Extract(filepath.ToSlash(rel), text)
		for _, p := range bad {
			t.Errorf("%s", p)
		}
		for _, ex := range exs {
			de, ps := docCheck(ex, targets, filepath.Join(repo, "config.env"))
			docClassify(&de, used)
			all = append(all, de)
			problems = append(problems, ps)
		}
	}
	for i, m := range docStaticOnly {
		assert.True(t, used[i], "no example is only checked because it %s: drop the reason", m.why)
	}
	require.NotEmpty(t, all)

	// Every example: the static checks. One that fails them is not run.
	for i, ex := range all {
		ok := t.Run("check/"+ex.Name(), func(t *testing.T) {
			for _, p := range problems[i] {
				t.Error(p)
			}
		})
		if !ok && ex.static == "" {
			all[i].static = "failed its checks"
		}
	}

	// The examples that can run here, in page order, in one workspace and one cache.
	root := docWorkspace(t, repo)
	for name, fixture := range docFixtures {
		copyDocFile(t, filepath.Join(repo, fixture), filepath.Join(root, name))
	}
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	old := demoTrainer
	demoTrainer = func(*Workspace, context.Context) (executor.Executor, func(), error) {
		return &scriptedExecutor{steps: 16}, func() {}, nil
	}
	t.Cleanup(func() { demoTrainer = old })
	registry := docRegistry(t, all)
	var bin string
	ran, checked := 0, 0
	for _, ex := range all {
		if ex.static != "" {
			checked++
			t.Logf("%s: only checked: %s", ex.Name(), ex.static)
			continue
		}
		if ex.mageFlag() && bin == "" && !testing.Short() {
			bin = rivalBinary(t) // before the examples change directory
		}
		ran++
		t.Run("run/"+ex.Name(), func(t *testing.T) { runDocExample(t, root, ex, targets, registry, bin) })
	}
	t.Logf("%d examples: %d run, %d only checked", len(all), ran, checked)
}

// checkDocTargets holds docTargets to magefile.go: each target's body there calls the method the
// test calls in its place.
func checkDocTargets(t *testing.T, src []byte, targets []magecli.Target) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "magefile.go", src, 0)
	require.NoError(t, err)
	bodies := map[string]string{} // by mage's listed name: "train:slurmScript", "demo"
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := strings.ToLower(fd.Name.Name[:1]) + fd.Name.Name[1:]
		if fd.Recv != nil {
			if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok {
				name = strings.ToLower(id.Name) + ":" + name
			}
		}
		bodies[name] = string(src[fset.Position(fd.Body.Pos()).Offset:fset.Position(fd.Body.End()).Offset])
	}
	for name, dt := range docTargets {
		var listed string
		for _, tg := range targets {
			if tg.Name == name {
				listed = tg.Listed
			}
		}
		body, ok := bodies[listed]
		if !ok {
			continue // an alias: its function is checked under its own name
		}
		assert.Contains(t, body, "."+dt.calls+"(", "magefile.go's %s calls no %s: the test would run another path than users", name, dt.calls)
		assert.Equal(t, dt.bare, strings.Contains(body, "tasks.Bare("), "%s: magefile.go runs it without a workspace exactly when docTargets says bare", name)
	}
}

// docArgsArePlaceholders says whether a call's arguments are for the reader to fill in.
func docArgsArePlaceholders(c magecli.Call) bool {
	for _, a := range c.Args {
		if docexamples.Placeholder(a) {
			return true
		}
	}
	return false
}

// docCheck parses one example and holds it to the targets, their arguments, the settings and
// config.env (at configPath); every problem names the page and line.
func docCheck(ex docexamples.Example, targets []magecli.Target, configPath string) (docExample, []string) {
	de := docExample{Example: ex}
	var problems []string
	fail := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s: ", ex.Name(), ex.Text)+fmt.Sprintf(format, args...))
	}
	if !ex.Template() {
		var err error
		if de.cmd, err = magecli.Parse(ex.Args, targets); err != nil {
			fail("%v", err)
			return de, problems
		}
	}
	env := append(append([]docexamples.Assignment(nil), ex.Export...), ex.Env...)
	extract := false
	for _, c := range de.cmd.Calls {
		extract = extract || c.Target.Name == "extract"
	}
	for _, a := range env {
		if !docKnownVariable(a.Name, extract) {
			also := ""
			if extract {
				also = " nor a fact extract reads (" + strings.Join(result.ExtractEnv, ", ") + ")"
			}
			fail("%s is neither a setting (README's list, tasks/settings.go) nor a config.env key%s", a.Name, also)
		}
	}
	for _, c := range de.cmd.Calls {
		for i, p := range c.Target.Params {
			if err := docCheckArg(p, c.Args[i], c); err != nil {
				fail("%s: %v", c.Target.Usage(), err)
			}
		}
	}
	workspace := false
	for _, c := range de.cmd.Calls {
		if dt, ok := docTargets[c.Target.Name]; !ok || !dt.bare {
			workspace = true
		}
	}
	if !workspace {
		return de, problems // extract's facts describe a log, not a configuration
	}
	values := map[string]string{}
	for _, a := range env {
		values[a.Name] = a.Value
	}
	lookup := func(k string) (string, bool) { v, ok := values[k]; return v, ok }
	cfg, err := loadConfig(configPath, "", lookup)
	if err != nil {
		fail("%v", err)
		return de, problems
	}
	// A cluster run's layout, as train:run and the script targets check it: NNODES × GPUs per node
	// must be TP × PP × DP, with the GPUs of a node GPUS_PER_NODE where the page names it.
	gpus := environment{lookup: lookup}.gpUsPerNode()
	for _, c := range de.cmd.Calls {
		platform := ""
		switch c.Target.Name {
		case "train:run", "train:slurm-script", "train:k8s-manifest":
			platform = c.Args[0]
		case "train:amd", "train:nvd":
			platform = strings.TrimPrefix(c.Target.Name, "train:")
		}
		cluster := useSlurm(cfg) || strings.HasPrefix(c.Target.Name, "train:slurm") || strings.HasPrefix(c.Target.Name, "train:k8s")
		if platform == "" || platform == hw.PlatformCPU || docexamples.Placeholder(platform) || !cluster {
			continue
		}
		if err := slurm.Check(cfg.int("NNODES"), gpus, cfg.int("TP"), cfg.int("PP"), cfg.int("DP")); err != nil {
			fail("with %d GPUs per node: %v", gpus, err)
		}
	}
	return de, problems
}

// docClassify says why an example is only checked, if it is: a template, or a reason of
// docStaticOnly (marked used).
func docClassify(de *docExample, used []bool) {
	if de.Template() {
		de.static = "a template: it stands for a family of commands"
		return
	}
	for _, c := range de.cmd.Calls {
		for i, m := range docStaticOnly {
			if m.match(c) && de.static == "" {
				de.static, used[i] = m.why, true
			}
		}
		if de.static == "" && docArgsArePlaceholders(c) {
			de.static = "a template: its arguments are placeholders"
		}
	}
}

// The checks catch what a page can get wrong, naming the page and line.
func TestDocExamplesCatchMistakes(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "magefile.go"))
	require.NoError(t, err)
	targets, err := magecli.Targets(src)
	require.NoError(t, err)
	page := "```sh\n" +
		"go run mage.go train:slurm-scrpt nvd nemo llama\n" +
		"NNODE=4 go run mage.go demo\n" +
		"go run mage.go train:run amd prim\n" +
		"go run mage.go train:run gpu prim llama\n" +
		"go run mage.go train:run amd prim gpt\n" +
		"go run mage.go train:slurm-script cpu mega llama\n" +
		"GBS=256 go run mage.go train:run amd prim qwen\n" +
		"NNODES=2 CLUSTER=k8s go run mage.go train:run nvd mega llama\n" +
		"go run mage.go demo extra\n" +
		"GPUS=8 go run mage.go compare\n" +
		"GPUS=8 SL=8192 go run mage.go extract train.log\n" +
		"```\n"
	exs, _ := docexamples.Extract("page.md", []byte(page))
	require.Len(t, exs, 11)
	want := []string{
		`page.md:2: go run mage.go train:slurm-scrpt nvd nemo llama: unknown target "train:slurm-scrpt"; did you mean train:slurm-script?`,
		"page.md:3: NNODE=4 go run mage.go demo: NNODE is neither a setting",
		"page.md:4: go run mage.go train:run amd prim: train:run takes 3 arguments (train:run PLATFORM FRAMEWORK MODEL), given 2",
		`page.md:5: go run mage.go train:run gpu prim llama: train:run PLATFORM FRAMEWORK MODEL: platform "gpu": amd, nvd or cpu`,
		`page.md:6: go run mage.go train:run amd prim gpt: train:run PLATFORM FRAMEWORK MODEL: unknown model "gpt"`,
		"page.md:7: go run mage.go train:slurm-script cpu mega llama: train:slurm-script PLATFORM FRAMEWORK MODEL: frameworks: mega does not run on platform cpu",
		"page.md:8: GBS=256 go run mage.go train:run amd prim qwen: config GBS (from environment): GBS 256 does not equal MBS×DP×GA",
		"page.md:9: NNODES=2 CLUSTER=k8s go run mage.go train:run nvd mega llama: with 8 GPUs per node: slurm: NNODES=2 × 8 GPUs per node = 16 processes",
		`page.md:10: go run mage.go demo extra: "extra" is not a target, and demo takes no arguments`,
		"page.md:11: GPUS=8 go run mage.go compare: GPUS is neither a setting",
	}
	for i, ex := range exs {
		_, problems := docCheck(ex, targets, filepath.Join("..", "config.env"))
		if i == len(want) {
			assert.Empty(t, problems, "extract reads GPUS and SL as facts of the log")
			continue
		}
		require.Len(t, problems, 1, ex.Name())
		assert.Contains(t, problems[0], want[i])
	}
}

func docKnownVariable(name string, extract bool) bool {
	if docOtherVariables[name] || strings.HasPrefix(name, "PRICE_") {
		return true
	}
	// Go's and mage's own variables (GOCACHE, GOFLAGS, MAGEFILE_CACHE), as a measurement sets them.
	if strings.HasPrefix(name, "MAGEFILE_") || (strings.HasPrefix(name, "GO") && strings.ToUpper(name) == name && !strings.Contains(name, "_")) {
		return true
	}
	if _, ok := specFor(name); ok {
		return true
	}
	for _, s := range settingSpecs {
		if s.name == name {
			return true
		}
	}
	if extract {
		for _, f := range result.ExtractEnv {
			if f == name {
				return true
			}
		}
	}
	return false
}

// docCheckArg checks one argument by the name magefile.go gives it.
func docCheckArg(param, arg string, c magecli.Call) error {
	if docexamples.Placeholder(arg) {
		return nil
	}
	switch param {
	case "platform":
		if arg != hw.PlatformAMD && arg != hw.PlatformNVIDIA && arg != hw.PlatformCPU {
			return fmt.Errorf("platform %q: amd, nvd or cpu", arg)
		}
	case "framework":
		if arg == "all" && c.Target.Name == "train:check" {
			return nil
		}
		if _, ok := frameworks.Lookup(arg); !ok {
			return fmt.Errorf("framework %q: %s", arg, strings.Join(frameworks.Names(), ", "))
		}
		p := c.Args[0]
		if p != hw.PlatformAMD && p != hw.PlatformNVIDIA && p != hw.PlatformCPU {
			return nil // the platform's own check says what is wrong
		}
		if _, _, err := frameworks.Resolve(arg, p); err != nil {
			return err
		}
	case "model":
		if arg == "all" && c.Target.Name == "train:check" {
			return nil
		}
		if _, err := models.Lookup(arg); err != nil {
			return err
		}
	}
	return nil
}

// docRegistry starts the registry that stands in for the team's when an example that runs names
// it; "" when none does, or when there is none to start (those examples then skip).
func docRegistry(t *testing.T, all []docExample) string {
	for _, ex := range all {
		values := slices.Clone(ex.Args)
		for _, a := range append(ex.Export, ex.Env...) {
			values = append(values, a.Value)
		}
		for _, v := range values {
			if ex.static == "" && strings.Contains(v, docRegistryHost) {
				if _, err := os.Stat(registrytest.Binary); err != nil {
					return ""
				}
				return registrytest.Start(t)
			}
		}
	}
	return ""
}

// runDocExample runs one example as written, in root.
func runDocExample(t *testing.T, root string, ex docExample, targets []magecli.Target, registry, bin string) {
	for _, a := range append(append([]docexamples.Assignment(nil), ex.Export...), ex.Env...) {
		v := a.Value
		if strings.Contains(v, docRegistryHost) {
			if registry == "" {
				if os.Getenv(registrytest.RequireEnv) == "1" {
					t.Fatalf("%s names the team's registry and %s is missing", ex.Text, registrytest.Binary)
				}
				t.Skipf("%s names the team's registry; without %s (apt-get install docker-registry) there is none to stand in for it (%s=1 makes this a failure)",
					ex.Text, registrytest.Binary, registrytest.RequireEnv)
			}
			v = strings.ReplaceAll(v, docRegistryHost, registry)
		}
		v = strings.ReplaceAll(v, "$(mktemp -d)", t.TempDir())
		v = strings.ReplaceAll(v, "$PWD", root)
		require.NotContains(t, v, "$", "%s: %s: a shell expansion the test does not know", ex.Name(), ex.Text)
		t.Setenv(a.Name, v)
	}
	_, verbose := ex.cmd.Flags["-v"]
	if ex.mageFlag() {
		runDocBinary(t, root, ex, targets, bin)
		return
	}
	for _, c := range ex.cmd.Calls {
		if g, ok := docGated[c.Target.Name]; ok && os.Getenv(g.env) != "1" {
			t.Skipf("%s runs %s, which %s; %s=1 (as CI sets it) runs it", ex.Name(), c.Target.Name, g.why, g.env)
		}
	}
	t.Chdir(root)
	for _, c := range ex.cmd.Calls {
		if c.Target.Name == "image:push" {
			docPushSetup(t, registry)
			c.Args = slices.Clone(c.Args)
			for i := range c.Args {
				c.Args[i] = strings.ReplaceAll(c.Args[i], docRegistryHost, registry)
			}
		}
		dt, ok := docTargets[c.Target.Name]
		require.True(t, ok, "%s runs %s, which docTargets lacks: add how magefile.go runs it, or a reason to docStaticOnly", ex.Name(), c.Target.Name)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		var log bytes.Buffer
		summary := "tasks: 0 run, 0 cached"
		stdout, err := captureStdout(t, func() error {
			if dt.bare {
				return docStderr(t, &log, func() error { return dt.run(ctx, nil, c.Args, verbose) })
			}
			var err error
			summary, err = runIn(ctx, root, verbose, &log, func(ctx context.Context, w *Workspace) error {
				return dt.run(ctx, w, c.Args, verbose)
			})
			return err
		})
		cancel()
		require.NoError(t, err, "%s: %s\n%s", ex.Name(), ex.Text, log.String())
		assert.Regexp(t, `^tasks: \d+ run, \d+ cached$`, summary)
		if ex.Stdout != "" {
			require.NoError(t, os.WriteFile(filepath.Join(root, ex.Stdout), []byte(stdout), 0o644))
		}
		checkDocOutput(t, root, c, stdout, log.String(), verbose)
	}
}

// checkDocOutput checks that a target that ran did what its page says.
func checkDocOutput(t *testing.T, root string, c magecli.Call, stdout, log string, verbose bool) {
	switch c.Target.Name {
	case "demo":
		assert.FileExists(t, filepath.Join(root, "output", "report.html"))
		if verbose {
			assert.Regexp(t, `(?m)cached`, log, "-v says for every task whether it ran or was cached")
		}
	case "train:slurm-script":
		assert.Contains(t, stdout, "#SBATCH --nodes=")
	case "train:k8s-manifest":
		assert.Contains(t, stdout, "kind: Job")
	case "image:push":
		raw, err := os.ReadFile(filepath.Join(root, "output", "images", c.Args[0]+"-pushed.json"))
		require.NoError(t, err, "image:push records what it pushed")
		var rec struct{ Repository, Digest string }
		require.NoError(t, json.Unmarshal(raw, &rec))
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, rec.Digest)
		assert.True(t, strings.HasPrefix(c.Args[1], rec.Repository), "%s pushed to %s", c.Args[1], rec.Repository)
	case "extract":
		assert.True(t, json.Valid([]byte(stdout)), "extract prints a result JSON: %s", stdout)
		if verbose {
			assert.Regexp(t, `(?m)^line \d+\tstep \d+\tread\t`, log, "-v explains on standard error what was read")
		}
	}
}

// docStderr runs f with os.Stderr sent to log: a target without a workspace writes there, as
// magefile.go hands it os.Stderr.
func docStderr(t *testing.T, log *bytes.Buffer, f func() error) error {
	tmp, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer tmp.Close()
	old := os.Stderr
	os.Stderr = tmp
	ferr := f()
	os.Stderr = old
	data, err := os.ReadFile(tmp.Name())
	require.NoError(t, err)
	log.Write(data)
	return ferr
}

// runDocBinary runs mage's own flags (-l, -compile) with the compiled targets: mage.go hands them
// to mage, which compiles the magefile as rivalBinary does.
func runDocBinary(t *testing.T, root string, ex docExample, targets []magecli.Target, bin string) {
	if bin == "" {
		t.Skip("mage's -l and -compile need the targets compiled, which -short skips")
	}
	if _, ok := ex.cmd.Flags["-compile"]; ok {
		// rivalBinary ran `go run mage.go -compile PATH`: this example, to a temporary path.
		assert.FileExists(t, bin)
		return
	}
	cmd := exec.Command(bin, "-l")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	listing := magecli.Listing(string(out), targets)
	for _, tg := range targets {
		if tg.Name == tg.Listed || !strings.Contains(tg.Name, ":") {
			continue
		}
		assert.Regexp(t, regexp.MustCompile(`(?m)^\s+`+regexp.QuoteMeta(tg.Name)+`\b`), listing, "-l lists %s as users type it", tg.Name)
	}
}

// docWorkspace is a checkout as users have one: the repository's source, linked, with its own
// config.env (a copy) and nothing of the repository's output or data.
func docWorkspace(t *testing.T, repo string) string {
	root := filepath.Join(t.TempDir(), "rival")
	require.NoError(t, os.MkdirAll(root, 0o755))
	entries, err := os.ReadDir(repo)
	require.NoError(t, err)
	for _, e := range entries {
		switch {
		case docOwnFiles[e.Name()]:
		case strings.HasSuffix(e.Name(), ".Dockerfile") || e.Name() == ".dockerignore":
			// A build sends links as links: the daemon reads a Dockerfile only as a file.
			copyDocFile(t, filepath.Join(repo, e.Name()), filepath.Join(root, e.Name()))
		default:
			require.NoError(t, os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(root, e.Name())))
		}
	}
	copyDocFile(t, filepath.Join(repo, "config.env"), filepath.Join(root, "config.env"))
	return root
}

func copyDocFile(t *testing.T, from, to string) {
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

// docPushBase is the base image docPushSetup builds once: FROM scratch with the container tests'
// probe as its /bin/sh, which records each RUN step and succeeds, in place of the GPU framework
// images of tens of GB the platform Dockerfiles start from.
var (
	docPushBaseOnce sync.Once
	docPushBaseErr  error
)

const docPushBase = "rival-test/doc-push-base:latest"

// docPushSetup readies image:push as written: a Docker daemon (the test is skipped without one),
// the team's registry (a local one), an empty Docker config, and IMAGE_BASE set to docPushBase.
func docPushSetup(t *testing.T, registry string) {
	t.Helper()
	if registry == "" {
		t.Skipf("image:push needs the team's registry; without %s there is none to stand in for it", registrytest.Binary)
	}
	ctx := context.Background()
	e, err := container.Connect(ctx)
	if err != nil {
		t.Skipf("image:push needs a Docker daemon: %v", err)
	}
	defer e.Close()
	docPushBaseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rival-doc-push-")
		if err != nil {
			docPushBaseErr = err
			return
		}
		defer os.RemoveAll(dir)
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			docPushBaseErr = err
			return
		}
		build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "probe"), "./container/testdata/probe")
		build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			docPushBaseErr = fmt.Errorf("go build probe: %v\n%s", err, out)
			return
		}
		if docPushBaseErr = os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY probe /probe\nCOPY probe /bin/sh\n"), 0o644); docPushBaseErr != nil {
			return
		}
		_, docPushBaseErr = e.Build(ctx, container.BuildSpec{ContextDir: dir, Tag: docPushBase})
	})
	require.NoError(t, docPushBaseErr)
	t.Setenv("IMAGE_BASE", docPushBase)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
}
