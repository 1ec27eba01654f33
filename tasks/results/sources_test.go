package results

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compare never walks the whole filesystem: OUTPUT_DIR=/ or the home
// folder is refused at once, and a folder with far more entries than any
// results folder stops the walk with an error naming it.
func TestCompareRefusesToWalkWhatIsNoResultFolder(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	crowded := t.TempDir()
	for i := 0; i < 50; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(crowded, fmt.Sprintf("f%d.txt", i)), nil, 0o644))
	}
	old := maxResultWalk
	maxResultWalk = 20
	t.Cleanup(func() { maxResultWalk = old })
	cases := []struct {
		name string
		top  string
		dirs []string
		want string
	}{
		{"OUTPUT_DIR=/", "/", nil, "/ is the filesystem root"},
		{"a results folder named /", t.TempDir(), []string{"/"}, "/ is the filesystem root"},
		{"OUTPUT_DIR=$HOME", home, nil, "is the home folder"},
		{"a crowded folder", crowded, nil, "holds more than 20 files and folders"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resultFiles(tc.top, tc.dirs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "OUTPUT_DIR")
		})
	}
	files, err := resultFiles(t.TempDir(), nil)
	require.NoError(t, err)
	assert.Empty(t, files)
}
