package frameworks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/spec"
	"github.com/rivalbench/rival/hw"
)

// upstreamDir is a folder of fetched upstream trees, named megatron-<first 8 hex of the commit> and
// primus-<tag> (docs/frameworks.md, "Preflight"). Without it the preflight tests skip.
func upstreamDir(t *testing.T) string {
	d := os.Getenv("RIVAL_UPSTREAM_DIR")
	if d == "" {
		t.Skip("set RIVAL_UPSTREAM_DIR to a folder holding megatron-b0cc2706, megatron-3bec9aa9 and primus-v26.2 trees to run the preflight against them")
	}
	return d
}

// runPreflight writes the launch's files under its OutputDir and runs its preflight with the fetched
// trees standing in for the image's.
func runPreflight(t *testing.T, dir string, r spec.Request, l spec.Launch) (string, error) {
	t.Helper()
	require.NotNil(t, l.Preflight, "mega and prim launches carry a preflight")
	for name, b := range l.Files {
		p := filepath.Join(r.OutputDir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	pin, err := spec.PinFor(r.Platform)
	require.NoError(t, err)
	py := os.Getenv("RIVAL_PREFLIGHT_PYTHON")
	if py == "" {
		py = "python3"
	}
	cmd := exec.Command(py, l.Preflight.Command[1:]...)
	cmd.Dir = l.Preflight.WorkDir
	cmd.Env = os.Environ()
	for k, v := range l.Preflight.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, mega.DirEnv+"="+filepath.Join(dir, "megatron-"+pin.MegatronCommit[:8]),
		PrimusDirEnv+"="+filepath.Join(dir, "primus-"+pin.Primus))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPreflightOnUpstreamTrees(t *testing.T) {
	dir := upstreamDir(t)
	forMatrix(t, func(t *testing.T, r spec.Request, _ spec.Launch) {
		t.Parallel()
		r.OutputDir = t.TempDir()
		l, err := Build(r)
		require.NoError(t, err)
		out, err := runPreflight(t, dir, r, l)
		require.NoError(t, err, out)
		assert.Contains(t, out, "preflight ok: ")
	})
}

// The preflight stops a launch the framework would reject, quoting the framework's own error.
func TestPreflightNegativeControlsOnUpstreamTrees(t *testing.T) {
	dir := upstreamDir(t)
	for _, c := range []struct {
		platform, fw string
		edit         func(l *spec.Launch)
		want         string
	}{
		{hw.PlatformNVIDIA, "mega", func(l *spec.Launch) { setArg(l.Preflight, "--min-lr", "0.003") }, "assert args.min_lr <= args.lr"},
		{hw.PlatformNVIDIA, "mega", func(l *spec.Launch) { l.Preflight.Command = append(l.Preflight.Command, "--overlap-everything") }, "unrecognized arguments: --overlap-everything"},
		{hw.PlatformAMD, "mega", func(l *spec.Launch) { setArg(l.Preflight, "--num-layers", "32.5") }, "invalid int value"},
		{hw.PlatformAMD, "prim", func(l *spec.Launch) { editEXP(l, "min_lr: 0.00003", "min_lr: 3e-05") }, "min_lr: '3e-05' is a str"},
		{hw.PlatformAMD, "prim", func(l *spec.Launch) { editEXP(l, "fp8: null", `fp8: "None"`) }, "'None' is not one of --fp8-format's choices"},
		{hw.PlatformAMD, "prim", func(l *spec.Launch) { editEXP(l, "min_lr: 0.00003", "min_lr: 0.003") }, "assert args.min_lr <= args.lr"},
	} {
		t.Run(c.fw+"/"+c.want, func(t *testing.T) {
			r := request(t, c.platform, c.fw, "llama")
			r.OutputDir = t.TempDir()
			l, err := Build(r)
			require.NoError(t, err)
			c.edit(&l)
			out, err := runPreflight(t, dir, r, l)
			require.Error(t, err, out)
			assert.Contains(t, out, "preflight failed")
			assert.Contains(t, out, c.want)
		})
	}
}

func setArg(l *spec.Launch, flag, v string) {
	for i := range l.Command {
		if l.Command[i] == flag {
			l.Command[i+1] = v
		}
	}
}

func editEXP(l *spec.Launch, from, to string) {
	for name, b := range l.Files {
		if strings.HasSuffix(name, "-exp.yaml") {
			l.Files[name] = []byte(strings.Replace(string(b), from, to, 1))
		}
	}
}
