package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandLine(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run(nil, strings.NewReader(""), &out, &errb))
	assert.Contains(t, errb.String(), "usage:")
	errb.Reset()
	assert.Equal(t, 2, run([]string{"apply"}, strings.NewReader(""), &out, &errb))
	assert.Contains(t, errb.String(), `unknown command "apply"`)
	assert.Equal(t, 2, run([]string{"run", "-deadline", "tomorrow"}, strings.NewReader(""), &out, &errb))
	assert.Equal(t, 0, run([]string{"help"}, strings.NewReader(""), &out, &errb))
}

func TestManifestCommand(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "..", "kube", "testdata", "golden", "cpu-fsdp-1.yaml"))
	require.NoError(t, err)
	var out, errb bytes.Buffer
	in := `{"name":"rival-cpu-fsdp","namespace":"default","platform":"cpu","nnodes":1,` +
		`"image":"registry.example/rival/nvd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",` +
		`"train":{"command":["python3","/rival/run/train.py"]}}`
	require.Equal(t, 0, run([]string{"manifest"}, strings.NewReader(in), &out, &errb), errb.String())
	assert.Equal(t, string(golden), out.String())

	for input, want := range map[string]string{
		`{"name":"x"}`: "kube: no namespace: set KUBE_NAMESPACE",
		`{"nmae":"x"}`: `rival-kube: reading the run from standard input: json: unknown field "nmae"`,
		`not json`:     "rival-kube: reading the run from standard input: invalid character",
		``:             "rival-kube: reading the run from standard input: EOF",
	} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 1, run([]string{"manifest"}, strings.NewReader(input), &out, &errb), input)
		assert.Contains(t, errb.String(), want, input)
		assert.Empty(t, out.String())
	}
}
