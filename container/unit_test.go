package container

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// The stream files are real daemon output (testdata/buildstream/capture.sh).
func TestReadBuildStreamOnCapturedOutput(t *testing.T) {
	ok, err := os.ReadFile("testdata/buildstream/ok.jsonl")
	require.NoError(t, err)
	var progress bytes.Buffer
	id, err := readBuildStream(bytes.NewReader(ok), &progress)
	require.NoError(t, err)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, id)
	assert.Contains(t, progress.String(), "Step 1/3 : FROM scratch\n")
	assert.Contains(t, progress.String(), "Successfully built ")

	failed, err := os.ReadFile("testdata/buildstream/run-fails.jsonl")
	require.NoError(t, err)
	progress.Reset()
	id, err = readBuildStream(bytes.NewReader(failed), &progress)
	assert.Empty(t, id)
	var be *BuildError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Message, `exec: "/bin/sh": stat /bin/sh: no such file or directory`)
	assert.Contains(t, progress.String(), "Step 3/3 : RUN echo hi", "output before the error still reaches the user")

	_, err = readBuildStream(strings.NewReader(`{"stream":"Step 1/1"}{"stream":`), nil)
	assert.ErrorContains(t, err, "read build output")

	// Pull progress (a FROM the daemon had to fetch) is printed as status lines.
	progress.Reset()
	_, err = readBuildStream(strings.NewReader(`{"status":"Downloading","progressDetail":{"current":1,"total":2},"progress":"[==>   ] 1B/2B","id":"abc"}`), &progress)
	require.NoError(t, err)
	assert.Equal(t, "abc: Downloading [==>   ] 1B/2B\n", progress.String())
}

func FuzzReadBuildStream(f *testing.F) {
	for _, name := range []string{"ok.jsonl", "run-fails.jsonl", "bad.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/buildstream", name))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"aux":{"ID":5}}`))
	f.Add([]byte(`{"error":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := readBuildStream(bytes.NewReader(data), nil)
		if err != nil && id != "" {
			t.Fatalf("both an image ID %q and an error %v", id, err)
		}
		var be *BuildError
		if errors.As(err, &be) && be.Message == "" {
			t.Fatal("a build error without the daemon's message")
		}
	})
}

func TestLineSplitter(t *testing.T) {
	var got []string
	l := newLineSplitter(func(s string) { got = append(got, s) })
	for _, chunk := range []string{"a", "b\nc", "\r\n", "\n", "d\ne\n", "tail"} {
		_, err := l.Write([]byte(chunk))
		require.NoError(t, err)
	}
	l.flush()
	assert.Equal(t, []string{"ab", "c", "", "d", "e", "tail"}, got)

	got = nil
	long := strings.Repeat("x", maxLine+5)
	l.Write([]byte(long + "\n"))
	require.Len(t, got, 2)
	assert.True(t, got[0] == long[:maxLine] && got[1] == long[maxLine:], "a long line is passed on in maxLine pieces")
}

// Any chunking of the same bytes gives the same lines.
func FuzzLineSplitter(f *testing.F) {
	f.Add([]byte("line 1\nline 2\r\nno end"), uint8(3))
	f.Add([]byte("\n\n\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		var whole, chunked []string
		a := newLineSplitter(func(s string) { whole = append(whole, s) })
		a.Write(data)
		a.flush()
		b := newLineSplitter(func(s string) { chunked = append(chunked, s) })
		n := int(step%17) + 1
		for i := 0; i < len(data); i += n {
			b.Write(data[i:min(i+n, len(data))])
		}
		b.flush()
		if strings.Join(whole, "\x00") != strings.Join(chunked, "\x00") {
			t.Fatalf("whole %q != chunked %q", whole, chunked)
		}
		for _, s := range whole {
			if strings.Contains(s, "\n") {
				t.Fatalf("line %q holds a newline", s)
			}
		}
	})
}

func TestPlatformHostConfig(t *testing.T) {
	base := RunSpec{Image: "img", RunID: "r1", Mounts: []Mount{
		{Source: "/data/enc", Target: "/rival/data", ReadOnly: true},
		{Source: "/out/run", Target: "/rival/out"},
	}}

	amd := base
	amd.Platform = PlatformAMD
	require.NoError(t, amd.normalize())
	cfg, hc := amd.configs()
	assert.Equal(t, []container.DeviceMapping{
		{PathOnHost: "/dev/kfd", PathInContainer: "/dev/kfd", CgroupPermissions: "rwm"},
		{PathOnHost: "/dev/dri", PathInContainer: "/dev/dri", CgroupPermissions: "rwm"},
	}, hc.Devices)
	assert.Equal(t, []string{"video"}, hc.GroupAdd)
	assert.Equal(t, []string{"seccomp=unconfined"}, hc.SecurityOpt)
	assert.Equal(t, container.IPCModeHost, hc.IpcMode)
	assert.Equal(t, int64(DefaultGPUShmSize), hc.ShmSize)
	assert.Empty(t, hc.DeviceRequests)
	assert.Equal(t, map[string]string{LabelManaged: "true", LabelRun: "r1", LabelPlatform: "amd"}, cfg.Labels)
	assert.Equal(t, "rival-r1", amd.Name)

	nvd := base
	nvd.Platform = PlatformNVD
	require.NoError(t, nvd.normalize())
	_, hc = nvd.configs()
	assert.Equal(t, []container.DeviceRequest{{Driver: "nvidia", Count: -1, Capabilities: [][]string{{"gpu"}}}}, hc.DeviceRequests)
	assert.Equal(t, []*container.Ulimit{{Name: "memlock", Soft: -1, Hard: -1}, {Name: "stack", Soft: 67108864, Hard: 67108864}}, hc.Ulimits)
	assert.Equal(t, container.IPCModeHost, hc.IpcMode)
	assert.Empty(t, hc.Devices)
	assert.Equal(t, []mount.Mount{
		{Type: mount.TypeBind, Source: "/data/enc", Target: "/rival/data", ReadOnly: true},
		{Type: mount.TypeBind, Source: "/out/run", Target: "/rival/out"},
	}, hc.Mounts)

	cpu := base
	require.NoError(t, cpu.normalize())
	_, hc = cpu.configs()
	assert.Equal(t, PlatformCPU, cpu.Platform)
	assert.Empty(t, hc.Devices)
	assert.Empty(t, hc.DeviceRequests)
	assert.Empty(t, hc.IpcMode)
	assert.Zero(t, hc.ShmSize, "cpu keeps the daemon's /dev/shm unless asked")
}

func TestRunSpecRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		spec RunSpec
		want string
	}{
		"no image":        {RunSpec{}, "no image"},
		"unknown platfom": {RunSpec{Image: "i", Platform: "tpu"}, `unknown platform "tpu"`},
		"relative target": {RunSpec{Image: "i", Mounts: []Mount{{Source: "/a", Target: "data"}}}, `"data" must be an absolute`},
		"empty source":    {RunSpec{Image: "i", Mounts: []Mount{{Target: "/data"}}}, "needs both a source and a target"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.ErrorContains(t, tc.spec.normalize(), tc.want)
		})
	}
}

// DockerRunCommand output is compared with testdata/dockerrun/*.txt;
// `go test ./container -run DockerRunCommand -update` rewrites them.
func TestDockerRunCommandGolden(t *testing.T) {
	mounts := []Mount{
		{Source: "/srv/rival/data/llama", Target: "/rival/data", ReadOnly: true},
		{Source: "/srv/rival/output/run 1", Target: "/rival/out"},
	}
	env := []string{"PYTHONUNBUFFERED=1", "HF_TOKEN=hf_do_not_print", "OMP_NUM_THREADS=8"}
	cases := map[string]RunSpec{
		"amd": {Image: "rival/amd:latest", Name: "rival-shell", Platform: PlatformAMD, Mounts: mounts, Env: env,
			WorkDir: "/rival/out", Interactive: true, Cmd: []string{"/bin/bash"}},
		"nvd": {Image: "rival/nvd:latest", Platform: PlatformNVD, Mounts: mounts, Env: env, WorkDir: "/rival/out",
			Cmd: []string{"torchrun", "--nproc-per-node=8", "train.py", "--data", "/rival/data/it's"}},
		"cpu": {Image: "rival-test/torch-base:bookworm", Platform: PlatformCPU, Network: "none", ShmSize: 1 << 30,
			Labels: map[string]string{"rival.task": "train"}, Timeout: time.Minute, Cmd: []string{"python3", "-c", "import torch"}},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			got := QuoteCommand(DockerRunCommand(spec)) + "\n"
			assert.NotContains(t, got, "hf_do_not_print")
			golden := filepath.Join("testdata", "dockerrun", name+".txt")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create %s", golden)
			assert.Equal(t, string(want), got)
		})
	}
}

func TestQuoteCommand(t *testing.T) {
	assert.Equal(t, `docker run '' 'a b' 'it'\''s' a=b,c`, QuoteCommand([]string{"docker", "run", "", "a b", "it's", "a=b,c"}))
}
