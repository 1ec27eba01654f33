package hw_test

import (
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// Kernel attributes are read within a bound too: a sysfs tree handed in
// (a container's bind mount, a test root) whose attribute is a FIFO, a
// link to /dev/zero, a directory or a huge file is an error naming it.
func TestSysfsReadsRefuseHostileFiles(t *testing.T) {
	readers := []struct {
		name string
		file string // under the root
		read func(root string) error
	}{
		{"ScanPCI", "0000:00:00.0/vendor", func(root string) error { _, err := hw.ScanPCI(root); return err }},
		{"ReadKFDNodes", "nodes/0/properties", func(root string) error { _, err := hw.ReadKFDNodes(root); return err }},
		{"ReadKFDNodes memory bank", "nodes/0/mem_banks/0/properties", func(root string) error { _, err := hw.ReadKFDNodes(root); return err }},
	}
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitSysfs, func(t *testing.T) (string, func() error) {
				root := t.TempDir()
				if r.file == "nodes/0/mem_banks/0/properties" {
					safefiletest.Plant(t, filepath.Join(root, "nodes", "0", "properties"), safefiletest.OverLimit, -1) // empty: valid
				}
				return filepath.Join(root, filepath.FromSlash(r.file)), func() error { return r.read(root) }
			})
		})
	}
}
