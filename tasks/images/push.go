package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/slurm"
	"github.com/rivalbench/rival/tasks/executor"
)

// pushRecord is what image:push leaves in OUTPUT_DIR/images/<platform>-pushed.json: the platform
// image as a registry holds it. Slurm runs of that platform name it by digest.
type pushRecord struct {
	Platform string `json:"platform"`
	container.Pushed
	PushedAt string `json:"pushed_at"`
}

// pushRecordPath is where image:push records the pushed image of platform.
func (b Builder) pushRecordPath(platform string) string {
	return filepath.Join(b.OutputDir, "images", b.Name(platform)+"-pushed.json")
}

// Push pushes a built platform image to repository and records it (pushRecordPath).
func (b Builder) Push(ctx context.Context, e *container.Engine, rec Record, repository string) (container.Pushed, error) {
	p, err := e.Push(ctx, rec.ImageID, repository, b.Out)
	if err != nil {
		return p, fmt.Errorf("image:push %s: %w", rec.Platform, err)
	}
	r := pushRecord{Platform: rec.Platform, Pushed: p, PushedAt: time.Now().UTC().Format(time.RFC3339)}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return p, err
	}
	path := b.pushRecordPath(rec.Platform)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return p, err
	}
	if err := cache.WriteFileAtomic(path, append(data, '\n'), 0o644); err != nil {
		return p, err
	}
	fmt.Fprintf(b.Out, "image %s: pushed %s (local %s); Slurm runs of %s now use it\n", rec.Platform, p.Ref(), ShortID(p.LocalID), rec.Platform)
	return p, nil
}

// pushed is the image of platform as image:push last pushed it; nil when it has not.
func (b Builder) pushed(platform string) (*pushRecord, error) {
	path := b.pushRecordPath(platform)
	data, err := cache.ReadFileLimit(context.Background(), path, cache.LimitConfig)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r pushRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w (push the image again with image:push)", path, err)
	}
	if !strings.HasPrefix(r.Digest, "sha256:") || r.Repository == "" {
		return nil, fmt.Errorf("%s names no pushed image: push it again with image:push", path)
	}
	return &r, nil
}

// SlurmImage is the image a Slurm run of platform names, in the syntax its container mode reads, and
// the reference recorded in the result as the image the nodes ran. In order:
//
//   - setting (SLURM_IMAGE), when set. pyxis runs need a reference that pins the content: repo@sha256:... or
//     an enroot squashfs (an absolute path ending in .sqsh) on storage every node sees.
//   - the image image:push pushed for the platform (by digest), provided built, when known, is
//     still the image that was pushed.
//   - for docker mode only, the local tag: each node's daemon must hold the same image.
//
// pyxis with neither refuses, saying how to deliver the image.
func (b Builder) SlurmImage(platform, setting string, built *Record) (image, ran string, err error) {
	mode := executor.ContainerMode(platform)
	if v := setting; v != "" {
		if mode != slurm.ContainerPyxis {
			return v, v, nil
		}
		if strings.HasPrefix(v, "/") && strings.HasSuffix(v, ".sqsh") {
			return v, v, nil
		}
		if reg, rest, ok := strings.Cut(v, "#"); ok {
			// Already enroot's syntax: REGISTRY#PATH:sha256:<hex> (any enroot) or REGISTRY#PATH@sha256:<hex> (enroot >= 4).
			p, dgst, ok := strings.Cut(rest, "@sha256:")
			if !ok {
				p, dgst, ok = strings.Cut(rest, ":sha256:")
			}
			named, err := reference.ParseNormalizedNamed(reg + "/" + p + "@sha256:" + dgst)
			if !ok || err != nil {
				return "", "", fmt.Errorf("SLURM_IMAGE=%s: enroot's REGISTRY#PATH form must name a digest, REGISTRY#PATH:sha256:<hex>", v)
			}
			return enrootRef(named), reference.FamiliarString(named), nil
		}
		named, err := reference.ParseNormalizedNamed(v)
		if err != nil {
			return "", "", fmt.Errorf("SLURM_IMAGE=%s: not an image reference nor an absolute .sqsh path: %v", v, err)
		}
		if _, ok := named.(reference.Digested); !ok {
			return "", "", fmt.Errorf("SLURM_IMAGE=%s is a tag, which every node resolves on its own when it pulls: name the image by digest (repo@sha256:..., as image:push prints) or give an enroot squashfs path", v)
		}
		return enrootRef(named), reference.FamiliarString(named), nil
	}
	rec, err := b.pushed(platform)
	if err != nil {
		return "", "", err
	}
	if rec != nil {
		if err := rec.current(platform, built); err != nil {
			return "", "", err
		}
		if mode == slurm.ContainerPyxis {
			named, err := reference.ParseNormalizedNamed(rec.Ref())
			if err != nil {
				return "", "", fmt.Errorf("%s: %w", b.pushRecordPath(platform), err)
			}
			return enrootRef(named), rec.Ref(), nil
		}
		return rec.Ref(), rec.Ref(), nil
	}
	if mode == slurm.ContainerPyxis {
		return "", "", fmt.Errorf("slurm: pyxis pulls the image on every node from a registry, and %s: "+
			"push it with `%sgo run mage.go image:push %s REGISTRY/REPOSITORY[:TAG]` on a host with a Docker engine (it builds the image first; credentials from `docker login`), "+
			"or set SLURM_IMAGE to REPOSITORY@sha256:... or to an enroot squashfs on storage every node sees "+
			"(`enroot import -o /shared/rival-%s.sqsh dockerd://%s` where a Docker daemon holds the image)",
			b.unpushed(platform, built), b.stackPrefix(), platform, b.Name(platform), executor.ImageTag(b.Name(platform)))
	}
	if built != nil && built.Tag != "" {
		return built.Tag, built.ImageID, nil
	}
	if mode == slurm.ContainerNone {
		return "", "", nil
	}
	return executor.ImageTag(b.Name(platform)), "", nil
}

// KubeImage is the image Kubernetes runs of platform use: setting (KUBE_IMAGE), else what
// image:push delivered. Only a digest will do: each node pulls on its own.
func (b Builder) KubeImage(platform, setting string, built *Record) (string, error) {
	if setting != "" {
		return setting, nil
	}
	rec, err := b.pushed(platform)
	if err != nil {
		return "", err
	}
	if rec == nil {
		return "", fmt.Errorf("kube: every node pulls the image from a registry, and %s: push it with `%sgo run mage.go image:push %s REGISTRY/REPOSITORY[:TAG]` on a host with a Docker engine, or set KUBE_IMAGE=REPOSITORY@sha256:...",
			b.unpushed(platform, built), b.stackPrefix(), platform)
	}
	if err := rec.current(platform, built); err != nil {
		return "", err
	}
	return rec.Ref(), nil
}

// PushedRef is the reference (repo@sha256:...) image:push recorded for platform, "" when this
// workspace records none.
func (b Builder) PushedRef(platform string) (string, error) {
	rec, err := b.pushed(platform)
	if err != nil || rec == nil {
		return "", err
	}
	return rec.Ref(), nil
}

// unpushed says why no image of platform can be pulled, true on any host: where this host's daemon
// holds the built image, that it is there only; else that no push is recorded, since a host may
// have no Docker daemon at all (a login node writing a script).
func (b Builder) unpushed(platform string, built *Record) string {
	if built != nil && built.ImageID != "" {
		tag := built.Tag
		if tag == "" {
			tag = executor.ImageTag(b.Name(platform))
		}
		return fmt.Sprintf("%s (%s) is only in this host's Docker daemon", tag, ShortID(built.ImageID))
	}
	return fmt.Sprintf("this workspace records no pushed %s image (%s does not exist)", platform, b.pushRecordPath(platform))
}

// current refuses a pushed image of platform that is no longer the one built (nil or no ID: not
// known).
func (r *pushRecord) current(platform string, built *Record) error {
	if built != nil && built.ImageID != "" && built.ImageID != r.LocalID {
		return fmt.Errorf("the %s image was rebuilt (%s) after image:push pushed %s (%s): push it again with `go run mage.go image:push %s %s`",
			platform, ShortID(built.ImageID), r.Ref(), ShortID(r.LocalID), platform, r.Repository)
	}
	return nil
}

// enrootRef writes a registry reference in enroot's syntax, which pyxis passes to
// `enroot import docker://`: enroot reads a registry only after '#'. A digest is written as the tag,
// REGISTRY#PATH:sha256:<hex>: enroot puts the tag straight into /v2/PATH/manifests/<tag>, which a
// registry answers by digest. That form parses in enroot 3.x (docker.sh's tag pattern allows ':')
// and 4.x alike, while REGISTRY#PATH@sha256:<hex> parses only from enroot 4.0.0. A digest wins over
// a tag, which enroot 4 also ignores when both are given.
func enrootRef(named reference.Named) string {
	s := reference.Domain(named) + "#" + reference.Path(named)
	if d, ok := named.(reference.Digested); ok {
		return s + ":" + d.Digest().String()
	}
	if t, ok := named.(reference.Tagged); ok {
		s += ":" + t.Tag()
	}
	return s
}

// stackPrefix is what a command given in a message needs in front to act on this builder's stack:
// "STACK=previous " for the previous stack, "" for the current one.
func (b Builder) stackPrefix() string {
	if b.Stack == "" || b.Stack == core.StackCurrent {
		return ""
	}
	return "STACK=" + b.Stack + " "
}
