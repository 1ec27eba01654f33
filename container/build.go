package container

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/moby/api/types/build"
	"github.com/zeebo/blake3"

	"github.com/rivalbench/rival/container/dockerapi"
)

// BuildSpec describes one image build.
type BuildSpec struct {
	// ContextDir is the build context directory (the repository root for
	// amd.Dockerfile and nvd.Dockerfile).
	ContextDir string
	// Dockerfile is relative to ContextDir (default "Dockerfile").
	Dockerfile string
	// Tag names the result, e.g. "rival/amd:latest" (optional).
	Tag string
	// BuildArgs are the Dockerfile ARGs; IMAGE_BASE overrides the FROM image
	// of Rival's Dockerfiles (for mirrors and tests).
	BuildArgs map[string]string
	// Labels are added to the image (e.g. rival.context=<digest>).
	Labels map[string]string
	// Exclude lists paths never sent (the cache directory, outputs); see
	// ContextOptions.
	Exclude []string
	// ContextDigest, when set, is the digest the caller computed for its
	// cache key: Build fails if what it sent differs (a file changed in
	// between), so a key never names an image built from other files.
	ContextDigest string
	// NoCache disables the daemon's layer cache.
	NoCache bool
	// Progress receives the build output as it arrives (nil: discarded).
	Progress io.Writer
}

// BuildError is a build that the daemon reported as failed inside its
// (HTTP 200) message stream, or refused outright.
type BuildError struct {
	Dockerfile string
	Message    string // the daemon's words
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("build %s: %s", e.Dockerfile, e.Message)
}

// Build sends the context of spec.ContextDir to the daemon's classic builder
// (no BuildKit session needed), streams its output to spec.Progress and
// returns the built image ID ("sha256:..."). An error message in the stream
// (a failing RUN, a missing base image) becomes a *BuildError.
func (e *Engine) Build(ctx context.Context, spec BuildSpec) (string, error) {
	dockerfile := spec.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	copt := ContextOptions{Dockerfile: dockerfile, Exclude: spec.Exclude}
	// Plan once up front so a bad context fails before any request is made.
	if _, err := planContext(spec.ContextDir, copt); err != nil {
		return "", err
	}
	rel, err := relInside(mustAbs(spec.ContextDir), dockerfile)
	if err != nil {
		return "", fmt.Errorf("build: Dockerfile %s: %w", dockerfile, err)
	}

	pr, pw := io.Pipe()
	hasher := blake3.New()
	sent := make(chan error, 1)
	go func() {
		err := WriteContext(io.MultiWriter(pw, hasher), spec.ContextDir, copt)
		pw.CloseWithError(err)
		sent <- err
	}()

	opts := dockerapi.BuildOptions{
		Dockerfile: rel,
		NoCache:    spec.NoCache,
		BuildArgs:  buildArgs(spec.BuildArgs),
		Labels:     spec.Labels,
	}
	if spec.Tag != "" {
		opts.Tags = []string{spec.Tag}
	}
	body, err := e.api.ImageBuild(ctx, pr, opts)
	if err != nil {
		pr.CloseWithError(errRequestDone)
		if cerr := <-sent; cerr != nil && !errors.Is(cerr, errRequestDone) {
			return "", cerr
		}
		return "", daemonBuildError(dockerfile, err)
	}
	defer body.Close()

	id, streamErr := readBuildStream(body, spec.Progress)
	// The daemon may stop reading the context early (a failed step): unblock
	// the writer, then prefer its own error, which explains a truncated send.
	pr.CloseWithError(errRequestDone)
	if cerr := <-sent; cerr != nil && !errors.Is(cerr, errRequestDone) {
		return "", cerr
	}
	if streamErr != nil {
		var be *BuildError
		if errors.As(streamErr, &be) {
			be.Dockerfile = dockerfile
		}
		return "", streamErr
	}
	if id == "" {
		return "", fmt.Errorf("build %s: the daemon finished without reporting an image ID", dockerfile)
	}
	if spec.ContextDigest != "" {
		if got := hex.EncodeToString(hasher.Sum(nil)); got != spec.ContextDigest {
			return id, fmt.Errorf("build %s: the context changed while building (digest %s, expected %s): run the build again", dockerfile, got, spec.ContextDigest)
		}
	}
	return id, nil
}

// errRequestDone closes the context pipe once the daemon has answered.
var errRequestDone = errors.New("build request finished")

func mustAbs(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// daemonBuildError turns a refused /build request (bad Dockerfile syntax,
// unknown instruction) into a *BuildError carrying the daemon's message.
func daemonBuildError(dockerfile string, err error) error {
	if dockerapi.IsRequestRefused(err) {
		return &BuildError{Dockerfile: dockerfile, Message: strings.TrimPrefix(err.Error(), "Error response from daemon: ")}
	}
	return fmt.Errorf("build %s: %w", dockerfile, err)
}

func buildArgs(m map[string]string) map[string]*string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

// streamMessage is one JSON message of the daemon's build and push streams. The daemon sends
// errors both as "error" (older API) and "errorDetail"; a push's status lines of their own carry
// no "progressDetail" (or a null one), its progress bars' updates do.
type streamMessage struct {
	Stream         string          `json:"stream"`
	Status         string          `json:"status"`
	Progress       string          `json:"progress"`
	ProgressDetail json.RawMessage `json:"progressDetail"`
	ID             string          `json:"id"`
	Error          string          `json:"error"`
	ErrorDetail    *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux json.RawMessage `json:"aux"`
}

// readBuildStream copies build output to progress and returns the image ID
// from the stream's aux message, or the first error message as *BuildError.
func readBuildStream(r io.Reader, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	dec := json.NewDecoder(r)
	var id string
	for {
		var m streamMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return id, nil
		}
		if err != nil {
			return "", fmt.Errorf("read build output: %w", err)
		}
		if msg := m.errorMessage(); msg != "" {
			if msg = strings.TrimSpace(msg); msg == "" {
				msg = "the daemon reported a build error without a message"
			}
			return "", &BuildError{Message: msg}
		}
		switch {
		case m.Stream != "":
			io.WriteString(progress, m.Stream)
		case m.Status != "":
			line := m.Status
			if m.ID != "" {
				line = m.ID + ": " + line
			}
			if m.Progress != "" {
				line += " " + m.Progress
			}
			io.WriteString(progress, line+"\n")
		}
		if len(m.Aux) > 0 {
			var aux build.Result
			if json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
				id = aux.ID
			}
		}
	}
}

func (m *streamMessage) errorMessage() string {
	if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
		return m.ErrorDetail.Message
	}
	return m.Error
}

// noProgress: a status line of its own ("Pushed", the digest), not a progress bar's update.
func (m *streamMessage) noProgress() bool {
	return len(m.ProgressDetail) == 0 || string(m.ProgressDetail) == "null"
}

// ErrImageNotFound marks an image that is not in the daemon's store.
var ErrImageNotFound = errors.New("image not found locally")

// BaseImageDigest identifies the content of image ref for cache keys: its
// repository digest ("name@sha256:...", sorted, first) when it came from a
// registry, else its local image ID ("sha256:..."). Never the tag alone: a
// tag moves, the digest does not.
func (e *Engine) BaseImageDigest(ctx context.Context, ref string) (string, error) {
	res, err := e.api.ImageInspect(ctx, ref)
	if err != nil {
		if dockerapi.IsNotFound(err) {
			return "", fmt.Errorf("%w: image %s not found locally; pull it (`docker pull %s`) or set IMAGE_BASE to an image you have", ErrImageNotFound, ref, ref)
		}
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	if len(res.RepoDigests) > 0 {
		d := append([]string(nil), res.RepoDigests...)
		sort.Strings(d)
		return d[0], nil
	}
	if res.ID == "" {
		return "", fmt.Errorf("inspect image %s: the daemon returned no image ID", ref)
	}
	return res.ID, nil
}

// ImageID is the local ID ("sha256:...") of image ref.
func (e *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	res, err := e.api.ImageInspect(ctx, ref)
	if err != nil {
		if dockerapi.IsNotFound(err) {
			return "", fmt.Errorf("%w: image %s", ErrImageNotFound, ref)
		}
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return res.ID, nil
}
