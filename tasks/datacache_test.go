package tasks

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// scriptMounts reads the container mounts of a Slurm batch script: docker's
// `-v HOST:CTR[:ro]` and pyxis's `--container-mounts=HOST:CTR[:ro],...`.
func scriptMounts(script string) map[string]bool {
	out := map[string]bool{} // container path → read-only
	add := func(spec string) {
		f := strings.Split(strings.Trim(spec, `'"`), ":")
		if len(f) >= 2 {
			out[f[1]] = len(f) == 3 && f[2] == "ro"
		}
	}
	for _, m := range regexp.MustCompile(`-v\s+(\S+)`).FindAllStringSubmatch(script, -1) {
		add(m[1])
	}
	for _, m := range regexp.MustCompile(`--container-mounts=(\S+)`).FindAllStringSubmatch(script, -1) {
		for _, s := range strings.Split(strings.Trim(m[1], `'"`), ",") {
			add(s)
		}
	}
	return out
}

// mountOf returns the mount a container path lies in: the longest mount that
// contains it decides, as in the kernel's mount table.
func mountOf(mounts map[string]bool, path string) string {
	best := ""
	for m := range mounts {
		if (path == m || strings.HasPrefix(path, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

func eightGPUHost(platform string) hw.Host {
	host := hw.Host{Platform: platform}
	for i := 0; i < 8; i++ {
		host.GPUs = append(host.GPUs, hw.GPU{Index: i})
	}
	return host
}

// `NNODES=2 DP=16 train:slurm-script nvd mega llama`: the printed batch script must give Megatron a
// writable index cache, since GPTDataset writes its index files there on rank 0 on the first run.
func TestSlurmScriptDataCacheIsWritable(t *testing.T) {
	w, _ := newWorkspace(t, "NNODES=2\nDP=16\n")
	host := eightGPUHost(hw.PlatformNVIDIA)
	cfg, err := w.platformConfig(hw.PlatformNVIDIA)
	require.NoError(t, err)
	ex, err := w.newSlurmExecutor(cfg, hw.PlatformNVIDIA, host, "rival-nvd:test", "")
	require.NoError(t, err)
	p, err := w.data().BuildPipeline()
	require.NoError(t, err)
	in, err := w.trainInputsForCfg(p, cfg, hw.PlatformNVIDIA, "mega", "llama", host, ex)
	require.NoError(t, err)
	script, err := w.slurmScript(in)
	require.NoError(t, err)
	mounts := scriptMounts(script)
	require.NotEmpty(t, mounts, "the script mounts the run's folders:\n%s", script)

	for _, flag := range []string{"--data-cache-path", "--tokenizer-model"} {
		v := regexp.MustCompile(regexp.QuoteMeta(flag) + `\s+'?([^\s'\\]+)`).FindStringSubmatch(script)
		require.NotNil(t, v, "the launch passes %s", flag)
		want := map[string]string{"--data-cache-path": "/rival/cache", "--tokenizer-model": "/rival/tokenizer"}[flag]
		m := mountOf(mounts, v[1])
		assert.Equal(t, want, m, "%s %s lies in mount %q (mounts %v)", flag, v[1], m, mounts)
	}
	assert.False(t, mounts["/rival/cache"], "the cache mount is writable")
}

// A prim run in Docker: the data_cache_path Primus hands Megatron lies in the writable cache mount.
func TestPrimDataCacheIsWritable(t *testing.T) {
	w, _ := newWorkspace(t, "")
	host := eightGPUHost(hw.PlatformAMD)
	cfg, err := w.platformConfig(hw.PlatformAMD)
	require.NoError(t, err)
	p, err := w.data().BuildPipeline()
	require.NoError(t, err)
	in, err := w.trainInputsForCfg(p, cfg, hw.PlatformAMD, "prim", "llama", host, &executor.Docker{Platform: hw.PlatformAMD})
	require.NoError(t, err)
	l, maps, _, err := w.trainLaunch(in, cfg, training.Name(in.Platform, in.Framework, in.Model, in.Dataset, 0), "unencoded")
	require.NoError(t, err)
	mounts := map[string]bool{}
	for _, m := range maps {
		mounts[m.Inside] = m.ReadOnly
	}
	var all strings.Builder
	for _, f := range l.Files {
		all.Write(f)
	}
	all.WriteString(strings.Join(l.Command, " "))
	v := regexp.MustCompile(`data_cache_path:?\s+"?([^\s"]+)`).FindStringSubmatch(all.String())
	require.NotNil(t, v, "the launch sets data_cache_path")
	assert.Equal(t, "/rival/cache", mountOf(mounts, v[1]))
}

// Every prim launch the targets build (through trainLaunch, as train:run and train:slurm-script do)
// must be complete: Mistral and a masking sliding window need the stock experiment, which the
// launch gets from the pinned release's facts, never from a field only tests fill in.
func TestPrimLaunchesBuildThroughTheTargetsPath(t *testing.T) {
	for _, model := range []string{"llama", "qwen", "mistral", "mistral-proxy"} {
		for _, sl := range []string{"2048", "8192"} {
			if sl == "8192" && model == "mistral-proxy" {
				continue // past the proxy's 4096 positions
			}
			w, _ := newWorkspace(t, "SL="+sl+"\n")
			host := eightGPUHost(hw.PlatformAMD)
			cfg, err := w.platformConfig(hw.PlatformAMD)
			require.NoError(t, err)
			p, err := w.data().BuildPipeline()
			require.NoError(t, err)
			in, err := w.trainInputsForCfg(p, cfg, hw.PlatformAMD, "prim", model, host, &executor.Docker{Platform: hw.PlatformAMD})
			require.NoError(t, err)
			_, _, _, err = w.trainLaunch(in, cfg, training.Name(in.Platform, in.Framework, in.Model, in.Dataset, 0), "unencoded")
			assert.NoError(t, err, "prim %s SL %s", model, sl)
		}
	}
}
