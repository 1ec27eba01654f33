package tasks

import (
	"path/filepath"
	"sort"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/images"
)

// images is the workspace's image builder: the root as the build context, IMAGE_BASE, and the cache
// and the configured folders kept out of the context.
func (w *Workspace) images() images.Builder {
	ex := []string{w.cache.Dir, w.path("OUTPUT_DIR"), w.path("DATA_DIR")}
	sort.Strings(ex)
	// An unknown STACK is refused where runs and launches are planned (trainStack); the builder takes
	// it as given, and core.PinFor refuses it again before anything is built.
	return images.Builder{
		Root: w.root, DataDir: w.path("DATA_DIR"), OutputDir: w.path("OUTPUT_DIR"), Exclude: ex,
		Base: w.env.imageBase(), Stack: w.env.value("STACK"), Runner: w.runner, Out: w.out,
	}
}

// shellSpec is the container `shell` starts: the platform image with the
// devices, mounts and environment a training run gets.
func (w *Workspace) shellSpec(rec images.Record, platform string) container.RunSpec {
	d := &executor.Docker{ImageID: rec.ImageID, Platform: platform}
	data, _ := filepath.Abs(w.path("DATA_DIR"))
	out, _ := filepath.Abs(w.path("OUTPUT_DIR"))
	rs, _ := d.Spec(core.Launch{Command: []string{"bash"}, WorkDir: "/rival", Env: map[string]string{"PYTHONUNBUFFERED": "1"}},
		[]executor.PathMap{{Host: data, Inside: "/rival/data", ReadOnly: true}, {Host: out, Inside: "/rival/output"}})
	rs.Interactive = true
	return rs
}
