package training

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWorkspaceRelativeLaunch(t *testing.T) {
	root := t.TempDir()
	cases := []struct{ name, in, want string }{
		{"the root", `{"WorkDir":"` + root + `"}`, `{"WorkDir":"${RIVAL_WORKSPACE}"}`},
		{"a path under it", `["--data-path=` + root + `/data/docs"]`, `["--data-path=${RIVAL_WORKSPACE}/data/docs"]`},
		{"a search path", `{"PYTHONPATH":"/opt/x:` + root + `/py"}`, `{"PYTHONPATH":"/opt/x:${RIVAL_WORKSPACE}/py"}`},
		{"a longer name", `["` + root + `2/x"]`, `["` + root + `2/x"]`},
		{"inside another path", `["/elsewhere` + root + `/x"]`, `["/elsewhere` + root + `/x"]`},
		{"outside", `["/data/shared/docs"]`, `["/data/shared/docs"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(workspaceRelative([]byte(tc.in), root)))
		})
	}
}
