package tasks

import (
	"fmt"
	"strings"

	"github.com/rivalbench/rival/english"
)

// checkKubeSettings refuses a Kubernetes run of platform (train:k8s-manifest, or a run with
// CLUSTER=k8s) that lacks settings it cannot do without, naming every missing one in one error:
// the executor stops at the first, which would cost one attempt per setting. It runs before the
// executor is built, and before any image is built for the run.
func (w *Workspace) checkKubeSettings(target, platform string) error {
	var missing, example []string
	if w.env.kube("IMAGE") == "" {
		ref, err := w.images().PushedRef(platform)
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		if ref == "" {
			missing = append(missing, fmt.Sprintf("KUBE_IMAGE (the %s image by digest, REPOSITORY@sha256:..., since this workspace records no image:push of it; or push it first with `go run mage.go image:push %s REGISTRY/REPOSITORY[:TAG]`)", platform, platform))
			example = append(example, "KUBE_IMAGE=REPOSITORY@sha256:...")
		}
	}
	for _, name := range []string{"KUBE_DATA_CLAIM", "KUBE_OUTPUT_CLAIM"} {
		if w.env.kube(strings.TrimPrefix(name, "KUBE_")) == "" {
			missing = append(missing, fmt.Sprintf("%s (%s)", name, settingDoc(name)))
			example = append(example, name+"=CLAIM")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	them := "them"
	if len(missing) == 1 {
		them = "it"
	}
	// The example command is the one that was refused: train:k8s-manifest, or a cluster run.
	command := "train:k8s-manifest " + platform + " FRAMEWORK MODEL"
	if target != "train:k8s-manifest" {
		command = "train:run " + platform + " FRAMEWORK MODEL"
		example = append([]string{"CLUSTER=k8s NNODES=N"}, example...)
	}
	return fmt.Errorf("%s: a Kubernetes run of %s needs %s that %s not set: %s; set %s in the environment, as in `%s go run mage.go %s` (docs/kubernetes.md)",
		target, platform, english.Plural(len(missing), "setting"), isAre(len(missing)), strings.Join(missing, "; "), them, strings.Join(example, " "), command)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// settingDoc is a setting's line in README's list, without its Markdown quoting.
func settingDoc(name string) string {
	for _, s := range settingSpecs {
		if s.name == name {
			return strings.ReplaceAll(s.doc, "`", "")
		}
	}
	return ""
}
