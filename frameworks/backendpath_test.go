package frameworks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// primusBackendPath chooses the Megatron tree as run_pretrain.sh and prepare.py do.
func TestPrimusBackendPath(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"none", map[string]string{"EXP": "x"}, ""},
		{"BACKEND_PATH first", map[string]string{"BACKEND_PATH": "/a", "MEGATRON_PATH": "/b"}, "/a"},
		{"MEGATRON_PATH in any case", map[string]string{"Megatron_Path": "/b"}, "/b"},
		{"an empty match falls back", map[string]string{"MEGATRON_PATH": "", "megatron_path": "/c"}, ""},
		{"relative to Primus's folder", map[string]string{"BACKEND_PATH": "third_party/Megatron-LM"}, "/workspace/Primus/third_party/Megatron-LM"},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, primusBackendPath(c.env)) })
	}
}
