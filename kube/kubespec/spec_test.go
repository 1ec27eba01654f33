package kubespec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testDigest = "registry.example/rival/nvd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseTolerations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Toleration
		err  string
	}{
		{"", nil, ""},
		{"nvidia.com/gpu:NoSchedule", []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}, ""},
		{"pool=gpu:NoExecute, spot", []Toleration{{Key: "pool", Operator: "Equal", Value: "gpu", Effect: "NoExecute"}, {Key: "spot", Operator: "Exists"}}, ""},
		{"pool=gpu:Never", nil, "effect"},
		{"=x:NoSchedule", nil, "key"},
		{"pool=a b", nil, `kube: toleration "pool=a b": value "a b": a valid label must be an empty string`},
	} {
		got, err := ParseTolerations(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestParseSelector(t *testing.T) {
	got, err := ParseSelector("gpu.example/model=h100, zone=a")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"gpu.example/model": "h100", "zone": "a"}, got)
	_, err = ParseSelector("zone")
	assert.ErrorContains(t, err, "KEY=VALUE")
	_, err = ParseSelector("-zone=a")
	assert.EqualError(t, err, `kube: node selector "-zone=a": key "-zone": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`)
	got, err = ParseSelector("")
	require.NoError(t, err)
	assert.Nil(t, got)
}

func TestValidateRefuses(t *testing.T) {
	base := Run{Name: "rival-cpu-fsdp", Namespace: "default", Platform: "cpu", NNodes: 1, Image: testDigest,
		Train: Step{Command: []string{"python3", "/rival/run/train.py"}}}
	for _, tc := range []struct {
		name string
		edit func(*Run)
		want string
	}{
		{"tag only", func(r *Run) { r.Image = "registry.example/rival/nvd:latest" }, "not named by digest"},
		{"bad name", func(r *Run) { r.Name = "Rival_Run" }, "DNS label"},
		{"no namespace", func(r *Run) { r.Namespace = "" }, "kube: no namespace: set KUBE_NAMESPACE"},
		{"dotted namespace", func(r *Run) { r.Namespace = "a.b" }, `kube: namespace "a.b": must not contain dots`},
		{"zero nodes", func(r *Run) { r.NNodes = 0 }, "at least one node"},
		{"gpus on cpu", func(r *Run) { r.GPUsPerNode = 2 }, "want 0 on cpu"},
		{"secret env", func(r *Run) { r.Train.Env = map[string]string{"HF_TOKEN": "x"} }, "Secret"},
		{"rendezvous env", func(r *Run) { r.Train.Env = map[string]string{"MASTER_ADDR": "x"} }, "set by the manifest"},
		{"relative workdir", func(r *Run) { r.Train.WorkDir = "work" }, "not absolute"},
		{"escaping subpath", func(r *Run) { r.Volumes = []Volume{{Claim: "c", SubPath: "../x", MountPath: "/m"}} }, "sub-path"},
		{"bad claim", func(r *Run) { r.Volumes = []Volume{{Claim: "Bad_Claim", MountPath: "/m"}} }, "claim name"},
		{"empty command", func(r *Run) { r.Train.Command = nil }, "command is empty"},
		{"empty preflight", func(r *Run) { r.Preflight = &Step{} }, "the preflight command is empty"},
		{"platform", func(r *Run) { r.Platform = "tpu" }, `kube: platform "tpu": want nvd, amd or cpu`},
		{"port", func(r *Run) { r.MasterPort = 70000 }, "not a TCP port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			tc.edit(&r)
			_, err := r.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	r, err := base.Validate()
	require.NoError(t, err)
	assert.Equal(t, 29500, r.MasterPort)
	assert.Equal(t, "16Gi", r.ShmSize)
}

func TestGPUResource(t *testing.T) {
	for platform, want := range map[string]string{"nvd": "nvidia.com/gpu", "amd": "amd.com/gpu", "cpu": ""} {
		got, err := GPUResource(platform)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

// A run crosses to the rival-kube program as JSON and comes back the same.
func TestRunJSONRoundTrip(t *testing.T) {
	ttl, secs := int32(60), int64(30)
	in := Run{
		Name: "rival-nvd-mega", Namespace: "bench", Platform: "nvd", NNodes: 2, GPUsPerNode: 8, Image: testDigest,
		Train:      Step{Command: []string{"torchrun", "--node_rank=0", "keep $(HOME)"}, Env: map[string]string{"A": "1"}, WorkDir: "/w"},
		Preflight:  &Step{Command: []string{"python3", "p.py"}, Env: map[string]string{"B": "2"}},
		Volumes:    []Volume{{Claim: "data", SubPath: "x/y", MountPath: "/rival/data", ReadOnly: true}, {Claim: "out", MountPath: "/rival/run"}},
		MasterPort: 29700, ServiceAccount: "sa", PriorityClass: "pc", NodeSelector: map[string]string{"k": "v"},
		Tolerations: []Toleration{{Key: "a", Operator: "Equal", Value: "b", Effect: "NoExecute", TolerationSeconds: &secs}},
		Framework:   "mega", ActiveDeadline: 3600, ShmSize: "8Gi", TTLAfterFinishedS: &ttl,
		PodAnnotations: map[string]string{"x/y": "z"},
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out Run
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, in, out)
	assert.Contains(t, string(b), `"tolerations":[{"key":"a","operator":"Equal","value":"b","effect":"NoExecute","tolerationSeconds":30}]`,
		"a toleration is written as Kubernetes writes one")
}

func FuzzParseTolerations(f *testing.F) {
	for _, s := range []string{"", "a:NoSchedule", "a=b:NoExecute,c", "=:", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ParseTolerations(s)
		if err != nil {
			return
		}
		for _, tol := range ts {
			if tol.Key == "" {
				t.Fatalf("%q gave a toleration without a key", s)
			}
		}
	})
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b,c=d", "=", "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseSelector(s)
		if err != nil {
			return
		}
		for k := range m {
			if k == "" {
				t.Fatalf("%q gave an empty key", s)
			}
		}
	})
}
