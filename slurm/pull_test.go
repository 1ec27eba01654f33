package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDocker is a docker on PATH that records every call in $FAKE_DOCKER_LOG and keeps its "daemon"
// in $FAKE_DOCKER_STATE: image inspect succeeds once the image was pulled (or when the state holds it
// from the start); pull stores the digest $FAKE_DOCKER_PULLS (the registry's answer); run prints its
// arguments.
const fakeDocker = `#!/bin/bash
printf '%s\n' "$*" >> "$FAKE_DOCKER_LOG"
case "$1 $2" in
"image inspect")
  ref="${@: -1}"
  [ -f "$FAKE_DOCKER_STATE/present" ] || { echo "Error: No such image: $ref" >&2; exit 1; }
  case "$4" in
  *RepoDigests*) printf '%s\n' "$(cat "$FAKE_DOCKER_STATE/present")" ;;
  *) echo sha256:1d ;;
  esac ;;
"pull "*)
  [ -n "$FAKE_DOCKER_PULLS" ] || { echo "Error response from daemon: pull access denied: unauthorized" >&2; exit 1; }
  echo "${2%@*}@$FAKE_DOCKER_PULLS" > "$FAKE_DOCKER_STATE/present"
  echo "Status: Downloaded newer image for $2" ;;
"run "*) echo "docker run $*" ;;
*) echo "fake docker: $*" >&2; exit 2 ;;
esac
`

// runDockerNode runs a docker-mode job's script with fake srun, scontrol and docker on PATH, as
// node 0 of two. It returns the output, the exit error and the docker calls.
func runDockerNode(t *testing.T, image string, present, pulls string) (string, error, []string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	bin, state := filepath.Join(dir, "bin"), filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.MkdirAll(state, 0o755))
	if present != "" {
		require.NoError(t, os.WriteFile(filepath.Join(state, "present"), []byte(present+"\n"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(bin, "srun"), []byte("#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\nSLURM_NODEID=0 SLURMD_NODENAME=gpu07 exec \"$@\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\nprintf 'gpu07\\ngpu08\\n'\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "docker"), []byte(fakeDocker), 0o755))
	job := Job{Name: "pull", NNodes: 2, GPUsPerNode: 8, Container: ContainerDocker, Image: image,
		Command: []string{"--rank=@NODE_RANK@"}, OutputDir: filepath.Join(dir, "out"), LogPath: filepath.Join(dir, "out", "log")}
	script, err := Script(job)
	require.NoError(t, err)
	path := filepath.Join(dir, "job.sbatch")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	logPath := filepath.Join(dir, "docker.log")
	cmd := exec.Command(bash, path)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "SLURM_JOB_NODELIST=gpu[07-08]", "SLURM_JOB_ID=12",
		"SLURM_CPUS_ON_NODE=4", "FAKE_DOCKER_LOG=" + logPath, "FAKE_DOCKER_STATE=" + state, "FAKE_DOCKER_PULLS=" + pulls}
	out, runErr := cmd.CombinedOutput()
	calls, _ := os.ReadFile(logPath)
	return string(out), runErr, strings.Split(strings.TrimSpace(string(calls)), "\n")
}

func TestDockerNodePullsByDigest(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	ref := "registry.example:5000/rival/amd@" + digest
	other := "sha256:" + strings.Repeat("cd", 32)
	for _, tc := range []struct {
		name, image, present, pulls string
		ok                          bool
		pulled                      bool
		has                         string
	}{
		{name: "a fresh node pulls by digest", image: ref, pulls: digest, ok: true, pulled: true, has: "rival: node gpu07 pulls " + ref},
		{name: "a node that has it does not pull", image: ref, present: "registry.example:5000/rival/amd@" + digest, ok: true},
		{name: "a pull without credentials says how to log in", image: ref, pulled: true, has: "docker login writes ~/.docker/config.json"},
		{name: "a pull that yields another digest stops the node", image: ref, pulls: other, pulled: true, has: "not " + digest},
		{name: "a tag is never pulled", image: "rival/amd:latest", has: "is not in the Docker daemon of node gpu07"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err, calls := runDockerNode(t, tc.image, tc.present, tc.pulls)
			pulls := 0
			ran := false
			for _, c := range calls {
				if strings.HasPrefix(c, "pull ") {
					pulls++
					assert.Equal(t, "pull "+tc.image, c, "pulls exactly the digest reference")
				}
				ran = ran || strings.HasPrefix(c, "run ")
			}
			assert.Equal(t, tc.pulled, pulls == 1, "docker calls: %q", calls)
			assert.Equal(t, tc.ok, ran, "docker run only after the image is there and verified: %q\n%s", calls, out)
			if tc.ok {
				require.NoError(t, err, out)
				assert.Contains(t, out, "docker run run --rm --name rival-slurm-12-0")
			} else {
				require.Error(t, err, out)
			}
			if tc.has != "" {
				assert.Contains(t, out, tc.has)
			}
		})
	}
}

func TestIsDigestRef(t *testing.T) {
	assert.True(t, IsDigestRef("registry.example:5000/rival/amd@sha256:"+strings.Repeat("0f", 32)))
	assert.False(t, IsDigestRef("rival/amd@sha256:0f3c5e"))
	assert.False(t, IsDigestRef("rival/amd:latest"))
	assert.False(t, IsDigestRef("rival/amd@sha256:"+strings.Repeat("0F", 32)))
}
