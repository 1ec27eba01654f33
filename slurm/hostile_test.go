package slurm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
	"github.com/rivalbench/rival/slurm"
)

// The files nodes leave under OutputDir/nodes/ live on a shared folder
// anyone in the job could write: each is read as a regular file of
// bounded size, and a hostile one is an error naming it.
func TestNodeFilesRefuseHostileFiles(t *testing.T) {
	readers := []struct {
		file  string
		valid map[string]string // other files of the node
		read  func(dir string) error
	}{
		{"hostname.txt", nil, func(dir string) error { _, err := slurm.ReadNodeHardware(dir); return err }},
		{"nvidia-smi.csv", map[string]string{"hostname.txt": "n1\n"}, func(dir string) error { _, err := slurm.ReadNodeHardware(dir); return err }},
		{slurm.NodeImageIDName, nil, func(dir string) error { _, err := slurm.NodeImageID(dir); return err }},
	}
	for _, r := range readers {
		t.Run(r.file, func(t *testing.T) {
			safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitNodeFile, func(t *testing.T) (string, func() error) {
				dir := t.TempDir()
				node := filepath.Join(dir, "nodes", "n1")
				require.NoError(t, os.MkdirAll(node, 0o755))
				for name, content := range r.valid {
					require.NoError(t, os.WriteFile(filepath.Join(node, name), []byte(content), 0o644))
				}
				return filepath.Join(node, r.file), func() error { return r.read(dir) }
			})
		})
	}
}

// A power log grows with the run, so it is streamed, not limited: a
// non-regular one is refused, a long one read in full, and the read
// stops when its context ends.
func TestReadNodePowerStreamsAndRefusesHostileFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.NonRegular, 0, func(t *testing.T) (string, func() error) {
		dir := t.TempDir()
		return filepath.Join(dir, "nodes", "n1", slurm.PowerFile), func() error {
			_, err := slurm.ReadNodePower(context.Background(), dir, hw.PlatformNVIDIA)
			return err
		}
	})

	dir := t.TempDir()
	p := filepath.Join(dir, "nodes", "n1", slurm.PowerFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	var b strings.Builder
	const samples = 100000 // about 4 MB: more than one read's worth
	for i := range samples {
		fmt.Fprintf(&b, "@ %d.5\n0, %d.25, 3000\n", 1700000000+i, 300+i%7)
	}
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	nodes, err := slurm.ReadNodePower(context.Background(), dir, hw.PlatformNVIDIA)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	assert.Len(t, nodes[0].Samples, samples)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = slurm.ReadNodePower(ctx, dir, hw.PlatformNVIDIA)
	require.ErrorIs(t, err, context.Canceled)
}
