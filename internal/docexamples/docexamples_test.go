package docexamples

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const page = "# A page\n" +
	"\n" +
	"Run `go run mage.go -v demo` twice; `go run mage.go` alone is the command's name.\n" +
	"```sh\n" +
	"# a comment\n" +
	"export RIVAL_STORE=oci://registry.example.com:5000/team/rival\n" +
	"docker login registry.example.com:5000\n" +
	"NNODES=4 DP=32 GPU=\"H100 SXM\" \\\n" +
	"  go run mage.go train:slurm-script nvd nemo llama > llama.sbatch   # the script\n" +
	"go test ./...\n" +
	"```\n" +
	"```go\n" +
	"x := \"go run mage.go demo\"\n" +
	"```\n" +
	"```\n" +
	"go run mage.go compare && go run mage.go store:ls | head\n" +
	"mage image:push nvd r/x\n" +
	"```\n" +
	"A template, `SL=4096 go run mage.go ...`, and `go run mage.go <target>`; a span across\n" +
	"lines, `RIVAL_CACHE=$(mktemp -d) time go run mage.go\n" +
	"extract train.log`, and ``go run mage.go image:push PLATFORM REGISTRY/REPOSITORY[:TAG]``.\n"

func TestExtract(t *testing.T) {
	exs, problems := Extract("page.md", []byte(page))
	var names []string
	for _, e := range exs {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"page.md:3", "page.md:8", "page.md:16", "page.md:16", "page.md:19", "page.md:19", "page.md:20", "page.md:21"}, names)
	require.Len(t, exs, 8)

	assert.True(t, exs[0].Inline)
	assert.Equal(t, []string{"-v", "demo"}, exs[0].Args)

	script := exs[1]
	assert.False(t, script.Inline)
	assert.Equal(t, 1, script.Block)
	assert.Equal(t, []Assignment{{"RIVAL_STORE", "oci://registry.example.com:5000/team/rival"}}, script.Export)
	assert.Equal(t, []Assignment{{"NNODES", "4"}, {"DP", "32"}, {"GPU", "H100 SXM"}}, script.Env)
	assert.Equal(t, []string{"train:slurm-script", "nvd", "nemo", "llama"}, script.Args)
	assert.Equal(t, "llama.sbatch", script.Stdout)

	assert.Equal(t, []string{"compare"}, exs[2].Args)
	assert.Equal(t, []string{"store:ls"}, exs[3].Args)
	assert.Empty(t, exs[2].Export, "an export holds for its own block only")

	assert.True(t, exs[4].Template())
	assert.True(t, exs[5].Template())
	assert.Equal(t, []Assignment{{"RIVAL_CACHE", "$(mktemp -d)"}}, exs[6].Env)
	assert.Equal(t, []string{"extract", "train.log"}, exs[6].Args)
	assert.False(t, exs[6].Template())
	assert.Equal(t, []string{"image:push", "PLATFORM", "REGISTRY/REPOSITORY[:TAG]"}, exs[7].Args)

	require.Len(t, problems, 1)
	assert.Equal(t, 17, problems[0].Line)
	assert.Contains(t, problems[0].Why, "write `go run mage.go image:push nvd r/x`")
}

func TestPlaceholder(t *testing.T) {
	for _, a := range []string{"PLATFORM", "REGISTRY/REPOSITORY[:TAG]", "A.json", "LOG", "IN.jsonl", "OUT_PREFIX"} {
		assert.True(t, Placeholder(a), a)
	}
	for _, a := range []string{"nvd", "train.log", "llama", "registry.example.com:5000/team/rival-nvd", "store:3f9c0e1a7b2d4c5e"} {
		assert.False(t, Placeholder(a), a)
	}
}

// Redirections with a descriptor and a timing command in front are read as the shell reads them.
func TestRedirectionsAndTime(t *testing.T) {
	page := "```sh\n" +
		"GOCACHE=$(mktemp -d) /usr/bin/time -v go run mage.go -compile /tmp/targets\n" +
		"go run mage.go demo 2>&1 | tail -1\n" +
		"/usr/bin/time -f '%U %S' go run mage.go extract x.log > r.json 2>err.txt\n" +
		"time go run mage.go compare\n" +
		"```\n"
	exs, problems := Extract("page.md", []byte(page))
	require.Empty(t, problems)
	require.Len(t, exs, 4)
	assert.Equal(t, []Assignment{{"GOCACHE", "$(mktemp -d)"}}, exs[0].Env)
	assert.Equal(t, []string{"-compile", "/tmp/targets"}, exs[0].Args)
	assert.Equal(t, []string{"demo"}, exs[1].Args, "2>&1 is no argument")
	assert.Empty(t, exs[1].Stdout)
	assert.Equal(t, []string{"extract", "x.log"}, exs[2].Args)
	assert.Equal(t, "r.json", exs[2].Stdout, "2>err.txt is standard error, not the output")
	assert.Equal(t, []string{"compare"}, exs[3].Args)
}
