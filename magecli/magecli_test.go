package magecli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func repoTargets(t testing.TB) []Target {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "magefile.go"))
	require.NoError(t, err)
	ts, err := Targets(src)
	require.NoError(t, err)
	return ts
}

func TestTargetsComeFromTheMagefile(t *testing.T) {
	ts := repoTargets(t)
	names := map[string]string{}
	for _, x := range ts {
		names[x.Name] = x.Listed
	}
	assert.Equal(t, "train:slurmScript", names["train:slurm-script"], "mage lists the Go name; users type the dashed one")
	for _, want := range []string{"demo", "compare", "purge", "train:check", "train:cpu", "verify:result", "verify:results", "extract"} {
		assert.Contains(t, names, want)
	}
}

func TestRewrite(t *testing.T) {
	ts := repoTargets(t)
	for _, tc := range []struct{ in, want string }{
		{"train:check amd compare", "train:check amd all all compare"},
		{"train:check amd prim compare", "train:check amd prim all compare"},
		{"train:check amd prim llama compare", "train:check amd prim llama compare"},
		{"train:check amd demo", "train:check amd all all demo"},
		{"train:check amd", "train:check amd all all"},
		{"train:check amd train:cpu", "train:check amd all all train:cpu"},
		{"-v train:check nvd", "-v train:check nvd all all"},
		{"train:slurm-script amd prim llama", "train:slurmscript amd prim llama"},
		{"purge data", "purge:data"},
		{"purge", "purge"},
		{"verify:result a.json b.json", "verify:results a.json b.json"},
		{"verify:result a.json", "verify:result a.json"},
		{"train:run amd prim llama", "train:run amd prim llama"},
		{"extract my-log.txt", "extract my-log.txt"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, strings.Fields(tc.want), Rewrite(strings.Fields(tc.in), ts))
		})
	}
}

func TestRewriteWithoutTheTargetList(t *testing.T) {
	assert.Equal(t, []string{"train:slurmscript", "amd", "prim", "llama"}, Rewrite(strings.Fields("train:slurm-script amd prim llama"), nil))
	_, unknown := Unknown([]string{"anything"}, nil)
	assert.False(t, unknown, "without the list mage decides")
}

func TestUnknownTargetSuggests(t *testing.T) {
	ts := repoTargets(t)
	for _, tc := range []struct{ args, suggest string }{
		{"trian:cpu", "train:cpu"},
		{"compre", "compare"},
		{"train:slurmscript amd prim llama", ""},
		{"verify:reslt a.json", "verify:result"},
		{"-v demoo", "demo"},
	} {
		msg, unknown := Unknown(strings.Fields(tc.args), ts)
		if tc.suggest == "" {
			assert.False(t, unknown, tc.args)
			continue
		}
		require.True(t, unknown, tc.args)
		assert.Contains(t, msg, "did you mean "+tc.suggest+"?", tc.args)
	}
	for _, known := range []string{"demo", "-l", "-v train:cpu", "train:slurm-script amd prim llama", "purge data", "-compile rival", "compare"} {
		_, unknown := Unknown(strings.Fields(known), ts)
		assert.False(t, unknown, known)
	}
	msg, unknown := Unknown([]string{"zzzzzzzzzz"}, ts)
	require.True(t, unknown)
	assert.Contains(t, msg, "go run mage.go -l lists every target")
}

func TestListingUsesTheDashedSpelling(t *testing.T) {
	ts := repoTargets(t)
	in := "Targets:\n  train:run             trains one framework\n  train:slurmScript     prints the Slurm batch script\n  verify:data           checks\n"
	out := Listing(in, ts)
	assert.Contains(t, out, "  train:slurm-script    prints the Slurm batch script\n", "the description keeps its column")
	assert.NotContains(t, out, "slurmScript")
	assert.Contains(t, out, "  train:run             trains one framework\n")
}

// One spelling everywhere: the README, the docs and every message say
// train:slurm-script, never mage's train:slurmScript or train:slurmscript.
func TestOneSpellingEverywhere(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	require.NoError(t, err)
	for _, dir := range []string{"tasks", "compare", "slurm", "hw", "result"} {
		gos, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		require.NoError(t, err)
		files = append(files, gos...)
	}
	files = append(files, filepath.Join("..", "README.md"), filepath.Join("..", "magefile.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, bad := range []string{"train:slurmScript", "train:slurmscript", "`mage "} {
			assert.NotContains(t, string(data), bad, "%s spells a target as mage does, not as the README", f)
		}
	}
}

// bareMage is a message telling users to run a mage binary, which the README never installs.
var bareMage = regexp.MustCompile(`\bmage [a-z]+:[a-z][a-z-]*`)

// Every message, script text and page says `go run mage.go image:push`, never `mage image:push`.
func TestNoMessageRunsAMageBinary(t *testing.T) {
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if strings.HasSuffix(path, "_test.go") || (ext != ".go" && ext != ".md" && ext != ".sh" && ext != ".sbatch" && ext != ".py") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := bareMage.FindString(line); m != "" {
				t.Errorf("%s:%d: %q tells users to run a mage binary: say `go run mage.go %s`", path, i+1, m, strings.TrimPrefix(m, "mage "))
			}
		}
		return nil
	})
	require.NoError(t, err)
}

func FuzzRewrite(f *testing.F) {
	ts := repoTargets(f)
	for _, s := range []string{"train:check amd compare", "purge data", "verify:result a.json b.json", "train:slurm-script a b c", "-v -t 1h demo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Fields(s)
		out := Rewrite(args, ts)
		// Nothing typed is lost: every argument survives or is folded into a target name.
		if len(out) < len(args)-2 {
			t.Fatalf("Rewrite(%q) = %q lost arguments", args, out)
		}
		Unknown(args, ts)
		Suggest(s, ts)
	})
}

func TestTargetsKnowTheirArguments(t *testing.T) {
	byName := map[string]Target{}
	for _, x := range repoTargets(t) {
		byName[x.Name] = x
	}
	assert.Equal(t, []string{"platform", "framework", "model"}, byName["train:run"].Params)
	assert.Equal(t, "train:slurm-script PLATFORM FRAMEWORK MODEL", byName["train:slurm-script"].Usage())
	assert.Empty(t, byName["demo"].Params)
	assert.Equal(t, []string{"dir"}, byName["compare:dir"].Params)
	assert.Equal(t, []string{"logfile"}, byName["extract"].Params)
	assert.Empty(t, byName["purge"].Params, "an alias takes the arguments of the function it names")
}

func TestParse(t *testing.T) {
	ts := repoTargets(t)
	for _, tc := range []struct {
		in    string
		calls []string // "target arg arg"
		flags map[string]string
	}{
		{"demo", []string{"demo"}, map[string]string{}},
		{"-v demo", []string{"demo"}, map[string]string{"-v": ""}},
		{"-l", nil, map[string]string{"-l": ""}},
		{"-compile rival", nil, map[string]string{"-compile": "rival"}},
		{"train:slurm-script nvd nemo llama", []string{"train:slurm-script nvd nemo llama"}, map[string]string{}},
		{"train:check amd compare", []string{"train:check amd all all", "compare"}, map[string]string{}},
		{"purge data", []string{"purge:data"}, map[string]string{}},
		{"verify:result a.json b.json", []string{"verify:results a.json b.json"}, map[string]string{}},
		{"extract train.log compare", []string{"extract train.log", "compare"}, map[string]string{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			cmd, err := Parse(strings.Fields(tc.in), ts)
			require.NoError(t, err)
			var calls []string
			for _, c := range cmd.Calls {
				calls = append(calls, strings.Join(append([]string{c.Target.Name}, c.Args...), " "))
			}
			assert.Equal(t, tc.calls, calls)
			assert.Equal(t, tc.flags, cmd.Flags)
		})
	}
}

func TestParseRefuses(t *testing.T) {
	ts := repoTargets(t)
	for _, tc := range []struct{ in, want string }{
		{"train:slurm-scrpt nvd nemo llama", `unknown target "train:slurm-scrpt"; did you mean train:slurm-script?`},
		{"train:run amd prim", "train:run takes 3 arguments (train:run PLATFORM FRAMEWORK MODEL), given 2"},
		{"demo extra", `"extra" is not a target, and demo takes no arguments: demo`},
		{"extract a.log b.log", `"b.log" is not a target, and extract takes 1 argument: extract LOGFILE`},
		{"demo -v", "flag -v after the target demo: mage reads flags only before the first target"},
		{"-x demo", "-x is not one of mage's flags"},
		{"-compile", "mage's flag -compile needs a value"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Parse(strings.Fields(tc.in), ts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := Parse([]string{"demo"}, nil)
	assert.ErrorContains(t, err, "magefile.go could not be read")
}
