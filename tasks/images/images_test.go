package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The images the Dockerfiles build FROM are the pinned ones (core.Pins), in the code and in the files.
// The Dockerfiles' defaults are the current stack's; the image task passes another stack's base.
func TestDockerfileBasesArePinned(t *testing.T) {
	for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA} {
		for _, stack := range core.StackNames {
			pin, err := core.PinFor(platform, stack)
			require.NoError(t, err)
			got, pinned, err := defaultBase(platform, stack)
			require.NoError(t, err)
			assert.True(t, pinned)
			assert.Equal(t, pin.Image, got.Image)
		}
		pin, err := core.PinFor(platform, core.StackCurrent)
		require.NoError(t, err)
		df, err := os.ReadFile(filepath.Join("..", "..", dockerfiles[platform]))
		require.NoError(t, err)
		assert.Contains(t, string(df), "\nARG IMAGE_BASE="+pin.Image+"\n", dockerfiles[platform])
		if platform == hw.PlatformNVIDIA {
			assert.Contains(t, string(df), "\nARG TORCHTITAN_VERSION="+strings.TrimPrefix(pin.TorchTitan, "v")+"\n")
		}
	}
	_, _, err := defaultBase(hw.PlatformNVIDIA, "newest")
	assert.ErrorContains(t, err, "want current or previous")
}

// The images of two stacks live side by side: records, tags and task ids name the other stack.
func TestStacksBuildSideBySide(t *testing.T) {
	cur, prev := Builder{DataDir: "d"}, Builder{DataDir: "d", Stack: core.StackPrevious}
	assert.Equal(t, "nvd", cur.Name(hw.PlatformNVIDIA))
	assert.Equal(t, "nvd-previous", prev.Name(hw.PlatformNVIDIA))
	assert.Equal(t, "cpu", prev.Name(hw.PlatformCPU), "the cpu image has one stack")
	assert.NotEqual(t, cur.recordPath(hw.PlatformAMD), prev.recordPath(hw.PlatformAMD))
}

// TestEnrootRefParsesInEnroot3And4 runs the image-reference parsing of enroot's own docker.sh, at
// v3.5.0 (the pattern in docker::import) and v4.0.0 (docker::_parse_uri), on the reference the
// pyxis script names, and checks that both request the pushed digest's manifest. It needs a clone
// of NVIDIA/enroot: RIVAL_ENROOT_REPO=/path/to/enroot (a work tree or a bare git directory).
func TestEnrootRefParsesInEnroot3And4(t *testing.T) {
	repo := os.Getenv("RIVAL_ENROOT_REPO")
	if repo == "" {
		t.Skip("set RIVAL_ENROOT_REPO to a clone of NVIDIA/enroot to run enroot's own parser")
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	named, err := reference.ParseNormalizedNamed("registry.example.com:5000/team/rival-nvd:v1@" + digest)
	require.NoError(t, err)
	uri := "docker://" + enrootRef(named)
	show := func(rev string) string {
		out, err := exec.Command("git", "--git-dir="+repo, "show", rev+":src/docker.sh").Output()
		if err != nil {
			out, err = exec.Command("git", "-C", repo, "show", rev+":src/docker.sh").Output()
		}
		require.NoError(t, err, "git show %s:src/docker.sh in %s", rev, repo)
		return string(out)
	}
	// v3.5.0: the reg_* patterns and the `if [[ "${uri}" =~ ...` test in docker::import.
	var v3 []string
	for _, line := range strings.Split(show("v3.5.0"), "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "local -r reg_") {
			v3 = append(v3, l)
		}
		if strings.HasPrefix(l, `if [[ "${uri}" =~ ^docker://`) {
			v3 = append(v3, l+` echo "${BASH_REMATCH[4]}"; echo "${BASH_REMATCH[5]}"; echo "${BASH_REMATCH[7]}"; else echo invalid; fi`)
			break
		}
	}
	require.Len(t, v3, 5, "docker.sh v3.5.0 no longer has the patterns this test reads")
	// v4.0.0: docker::_parse_uri, whole, printing user, registry, image, tag.
	src := show("v4.0.0")
	i := strings.Index(src, "docker::_parse_uri() {")
	require.GreaterOrEqual(t, i, 0)
	j := strings.Index(src[i:], "\n}\n")
	require.Greater(t, j, 0)
	v4 := "common::err() { echo invalid; exit 0; }\n" + src[i:i+j+3] + `docker::_parse_uri "$uri" | tail -n 3` + "\n"
	for name, script := range map[string]string{
		"v3.5.0": "f() {\n" + strings.Join(v3, "\n") + "\n}\nf\n",
		"v4.0.0": v4,
	} {
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "uri="+uri)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", name, out)
		assert.Equal(t, "registry.example.com:5000\nteam/rival-nvd\n"+digest+"\n", string(out),
			"enroot %s parses %s into registry, image, tag (the manifest it requests is /v2/IMAGE/manifests/TAG)", name, uri)
	}
}
