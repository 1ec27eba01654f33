package container

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"github.com/rivalbench/rival/safefile"
	"github.com/zeebo/blake3"
)

// SecretsFile is never sent to the daemon, at any depth of the context,
// whatever .dockerignore says: it holds HF_TOKEN and friends.
const SecretsFile = "secrets.env"

// alwaysExcludedDirs are top-level folders of the repository that are never
// part of a build context: Rival's local state and cache-like folders.
var alwaysExcludedDirs = []string{".rival", ".git"}

// ContextOptions says which files of a directory form a build context.
type ContextOptions struct {
	// Dockerfile is the Dockerfile's path relative to the context directory
	// (default "Dockerfile"). Like the docker CLI, it is kept in the context
	// even when .dockerignore excludes it, since the daemon must read it.
	Dockerfile string
	// Exclude lists paths (absolute, or relative to the context directory)
	// that are never included whatever .dockerignore says: the cache
	// directory, output folders. Paths outside the context are ignored.
	Exclude []string
}

// zeroTime is the modification time of every context entry, so the tar
// bytes (and so the digest) depend only on names, modes and contents.
var zeroTime = time.Unix(0, 0).UTC()

// WriteContext writes the build context of dir to w as an uncompressed tar:
// the files .dockerignore keeps (Docker's pattern rules, `!` exceptions and
// `**` included), never secrets.env, .git, .rival or opt.Exclude, in a fixed
// order with zeroed times and owners and normalised modes (0644/0755), so the
// same tree always gives the same bytes.
func WriteContext(w io.Writer, dir string, opt ContextOptions) error {
	plan, err := planContext(dir, opt)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range plan {
		if err := writeEntry(tw, e); err != nil {
			return fmt.Errorf("build context %s: %w", dir, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("build context %s: %w", dir, err)
	}
	return nil
}

// ContextDigest is the BLAKE3-256 (hex) of the bytes WriteContext produces:
// the image's cache key part that covers what was sent to the daemon.
func ContextDigest(dir string, opt ContextOptions) (string, error) {
	h := blake3.New()
	if err := WriteContext(h, dir, opt); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ContextFiles lists the entry names WriteContext would write, in order
// (directories end in "/"). For tests and for `image` to explain a digest.
func ContextFiles(dir string, opt ContextOptions) ([]string, error) {
	plan, err := planContext(dir, opt)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(plan))
	for i, e := range plan {
		names[i] = e.name
	}
	return names, nil
}

type contextEntry struct {
	name string // slash-separated, relative; dirs end in "/"
	abs  string
	info fs.FileInfo
}

func planContext(dir string, opt ContextOptions) ([]contextEntry, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("build context %s: %w", dir, err)
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("build context %s: not a directory", root)
	}
	dockerfile := opt.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	dockerfile, err = relInside(root, dockerfile)
	if err != nil {
		return nil, fmt.Errorf("build context %s: Dockerfile %s: %w", root, opt.Dockerfile, err)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dockerfile))); err != nil {
		return nil, fmt.Errorf("build context %s: Dockerfile: %w", root, err)
	}

	patterns, err := readDockerignore(root)
	if err != nil {
		return nil, err
	}
	// The daemon needs the Dockerfile and reads .dockerignore itself: keep
	// both, as the docker CLI does, when a pattern would drop them.
	for _, keep := range []string{".dockerignore", dockerfile} {
		if m, err := patternmatcher.Matches(keep, patterns); err == nil && m {
			patterns = append(patterns, "!"+keep)
		}
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf("build context %s: .dockerignore: %w", root, err)
	}

	never := make(map[string]bool)
	for _, d := range alwaysExcludedDirs {
		never[d] = true
	}
	for _, ex := range opt.Exclude {
		rel, err := relInside(root, ex)
		if errors.Is(err, errOutside) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("build context %s: exclude %s: %w", root, ex, err)
		}
		if rel == "." {
			return nil, fmt.Errorf("build context %s is itself excluded (%s): choose a context directory outside the cache and output folders", root, ex)
		}
		never[rel] = true
	}

	var plan []contextEntry
	parents := map[string]patternmatcher.MatchInfo{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if never[rel] || d.Name() == SecretsFile {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		excluded, info, err := pm.MatchesUsingParentResults(rel, parents[path.Dir(rel)])
		if err != nil {
			return fmt.Errorf("match %s: %w", rel, err)
		}
		if d.IsDir() {
			parents[rel] = info
		}
		if excluded {
			if d.IsDir() && !exceptionMayMatchUnder(pm, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode().IsRegular(), fi.Mode()&fs.ModeSymlink != 0:
			plan = append(plan, contextEntry{name: rel, abs: p, info: fi})
		case fi.IsDir():
			plan = append(plan, contextEntry{name: rel + "/", abs: p, info: fi})
		default:
			// Sockets, devices and pipes cannot be sent in a build context.
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("build context %s: %w", root, err)
	}
	return plan, nil
}

// exceptionMayMatchUnder reports whether an exception pattern ("!x") could
// re-include something below the excluded directory dir, in which case the
// walk must descend into it. Like Docker, it looks at literal prefixes only.
func exceptionMayMatchUnder(pm *patternmatcher.PatternMatcher, dir string) bool {
	if !pm.Exclusions() {
		return false
	}
	prefix := dir + "/"
	for _, p := range pm.Patterns() {
		if p.Exclusion() && strings.HasPrefix(p.String()+"/", prefix) {
			return true
		}
	}
	return false
}

func readDockerignore(root string) ([]string, error) {
	path := filepath.Join(root, ".dockerignore")
	data, err := safefile.ReadFile(context.Background(), path, safefile.LimitConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	patterns, err := ignorefile.ReadAll(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("build context: read %s: %w", path, err)
	}
	return patterns, nil
}

var errOutside = errors.New("outside the build context")

// relInside turns p (absolute, or relative to root) into a clean
// slash-separated path relative to root, or errOutside.
func relInside(root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil {
		return "", err
	}
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", errOutside
	}
	return filepath.ToSlash(rel), nil
}

func writeEntry(tw *tar.Writer, e contextEntry) error {
	hdr := &tar.Header{
		Name:    e.name,
		ModTime: zeroTime,
	}
	mode := e.info.Mode()
	switch {
	case mode.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Mode = 0o755
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(e.abs)
		if err != nil {
			return err
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
		hdr.Mode = 0o777
	default:
		hdr.Typeflag = tar.TypeReg
		hdr.Size = e.info.Size()
		hdr.Mode = 0o644
		if mode.Perm()&0o111 != 0 {
			hdr.Mode = 0o755
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	// A regular file when the context was listed; refused, not waited
	// on, if a FIFO has taken its place since.
	f, _, err := safefile.Open(e.abs)
	if err != nil {
		return err
	}
	defer f.Close()
	if n, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("%s shrank while being read (%d of %d bytes): retry once nothing writes to it: %w", e.name, n, hdr.Size, err)
	}
	return nil
}
