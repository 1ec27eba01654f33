package training

import (
	"time"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
)

// trainRun is one training run from its plan to its result: where its
// files go and, once Prepare knows the dataset's fingerprint, its launch.
type trainRun struct {
	site    Site
	in      Run
	name    string
	timeout time.Duration // TRAIN_TIMEOUT; 0 for none

	runDir, logPath, resultPath string
	absPrefix                   string // the encoded train split, absolute

	manifest data.Manifest // the dataset's, read once, by prepare
	launch   core.Launch
	maps     []executor.PathMap
	cacheDir string // Megatron's data cache folder of the dataset's fingerprint

	sampleOrder *result.SampleOrder // written by stage (writeSampleOrder)
	// frameworkSamples is the framework's preflight's digest of the first samples (nil: not reported).
	frameworkSamples *core.SampleDigest
	// heldOut is the held-out set stage wrote (nil: the run does not evaluate); frameworkHeldOut the
	// framework's preflight's digest of it (nil: not reported).
	heldOut          *result.HeldOut
	frameworkHeldOut *core.SampleDigest
	// effective is what the framework built, as its preflight read it back (nil: not reported).
	effective *effective.Config
}

// build builds the launch for a dataset fingerprint.
func (r *trainRun) build(fp string) error {
	var err error
	r.launch, r.maps, r.cacheDir, err = Launch(r.in, r.site, r.name, fp)
	return err
}
