package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/rivalbench/rival/cache"
)

// Media types and annotations of Rival's entries.
const (
	ArtifactAction = "application/vnd.rival.action.v1"
	ArtifactResult = "application/vnd.rival.result.v1"
	MediaRecord    = "application/vnd.rival.record.v1+json"
	MediaListing   = "application/vnd.rival.listing.v1+json"
	MediaBlob      = "application/vnd.rival.blob.v1"

	// AnnBLAKE3 is on every blob and config descriptor: the BLAKE3-256 of its content, which is what
	// Rival trusts (the sha256 wire digest only gets the bytes across).
	AnnBLAKE3 = "dev.rival.blake3"
	AnnName   = "dev.rival.name" // what a blob is: the output's workspace-relative path
	AnnKey    = "dev.rival.key"  // an action entry's key
	AnnTask   = "dev.rival.task" // the task that made an action entry
	// AnnPrefix starts the listing annotations of a result entry (dev.rival.platform, ...).
	AnnPrefix = "dev.rival."
)

// maxManifest bounds a manifest or config read from the store: entries hold a few descriptors and
// a record, never megabytes.
const maxManifest = 8 << 20

// File is one blob of an entry as the local cache holds it.
type File struct {
	Name       string       // the output's workspace-relative path, or its role ("result", "log")
	Digest     cache.Digest // BLAKE3 of the content
	Size       int64
	Compressed bool // stored with zstd in the local cache when pulled
}

// Entry is a manifest of the store, read and checked: its sha256 matched, and every descriptor
// carries a BLAKE3 annotation.
type Entry struct {
	Tag         string
	Digest      digest.Digest // the manifest's wire digest
	Annotations map[string]string
	Config      ocispec.Descriptor
	Blobs       []ocispec.Descriptor
}

// BLAKE3 is the recorded BLAKE3 of the entry's i-th blob.
func (e *Entry) BLAKE3(i int) cache.Digest {
	d, _ := cache.ParseDigest(e.Blobs[i].Annotations[AnnBLAKE3])
	return d
}

// ActionTag is the tag of the action entry of key.
func ActionTag(key cache.Digest) string { return "action-" + key.String() }

// ResultTag is the tag of the result entry whose result JSON has BLAKE3 d.
func ResultTag(d cache.Digest) string { return "result-" + d.String() }

// Has reports whether the store holds a manifest under tag.
func (s *Store) Has(ctx context.Context, tag string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*s.opt.timeout())
	defer cancel()
	_, err := s.repo.Resolve(ctx, tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, s.explain(err)
	}
	return true, nil
}

// Push stores an entry under tag: every blob first (each read from the cache c, verified against
// its BLAKE3 as it is read, skipped when the registry already holds it), then config, then the
// manifest. A reader therefore sees the whole entry or none, and an interrupted push leaves only
// blobs no manifest names. An entry already under tag is left as it is (entries are immutable):
// Push reports false then.
func (s *Store) Push(ctx context.Context, c *cache.Cache, tag, artifactType string, annotations map[string]string, config []byte, configType string, files []File) (bool, error) {
	if ok, err := s.Has(ctx, tag); err != nil || ok {
		return false, err
	}
	layers := make([]ocispec.Descriptor, len(files))
	for i, f := range files {
		desc, err := s.pushBlob(ctx, c, f)
		if err != nil {
			return false, err
		}
		layers[i] = desc
	}
	cfg := ocispec.Descriptor{MediaType: configType, Digest: digest.FromBytes(config), Size: int64(len(config)),
		Annotations: map[string]string{AnnBLAKE3: cache.HashBytes(config).String()}}
	if err := s.pushBytes(ctx, cfg, config); err != nil {
		return false, err
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType,
		Config:       cfg,
		Layers:       layers,
		Annotations:  annotations,
	}
	data, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	desc := ocispec.Descriptor{MediaType: m.MediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	err = s.attempt(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*s.opt.timeout())
		defer cancel()
		return s.repo.Manifests().PushReference(ctx, desc, bytes.NewReader(data), tag)
	})
	if err != nil {
		return false, fmt.Errorf("push manifest %s: %w", tag, s.explain(err))
	}
	return true, nil
}

// onAttempt, a test hook, is called before each try of an operation.
var onAttempt func()

// attempt runs op up to Attempts times while its failure is retryable, backing off between tries.
func (s *Store) attempt(ctx context.Context, op func(ctx context.Context) error) error {
	var err error
	for i := 0; i < s.opt.attempts(); i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(200<<i) * time.Millisecond):
			}
		}
		if onAttempt != nil {
			onAttempt()
		}
		if err = op(ctx); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (s *Store) pushBytes(ctx context.Context, desc ocispec.Descriptor, data []byte) error {
	return s.attempt(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*s.opt.timeout())
		defer cancel()
		if ok, err := s.repo.Blobs().Exists(ctx, desc); err == nil && ok {
			return nil
		}
		err := s.repo.Blobs().Push(ctx, desc, bytes.NewReader(data))
		if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return s.explain(err)
		}
		return nil
	})
}

// pushBlob uploads one cached blob: a first pass computes its sha256 (and checks its BLAKE3, so a
// corrupt local blob is never shared), a second streams it to the registry, which checks the
// sha256. Memory stays constant whatever the size; a failed transfer is tried again from the start.
func (s *Store) pushBlob(ctx context.Context, c *cache.Cache, f File) (ocispec.Descriptor, error) {
	rc, err := c.OpenBlob(f.Digest)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: %w", f.Name, err)
	}
	sh := sha256.New()
	b3, n, err := cache.HashReader(io.TeeReader(rc, sh))
	rc.Close()
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: read blob %s: %w", f.Name, f.Digest.Short(), err)
	}
	if b3 != f.Digest || (f.Size >= 0 && n != f.Size) {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: the local blob %s does not match its digest (run cache:verify): not shared", f.Name, f.Digest.Short())
	}
	desc := ocispec.Descriptor{MediaType: MediaBlob, Digest: digest.NewDigest(digest.SHA256, sh), Size: n,
		Annotations: map[string]string{AnnBLAKE3: f.Digest.String(), AnnName: f.Name}}
	err = s.attempt(ctx, func(ctx context.Context) error {
		ectx, cancel := context.WithTimeout(ctx, 2*s.opt.timeout())
		ok, err := s.repo.Blobs().Exists(ectx, desc)
		cancel()
		if err == nil && ok {
			return nil
		}
		rc, err := c.OpenBlob(f.Digest)
		if err != nil {
			return err
		}
		defer rc.Close()
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		body := s.watch(ctx, cancel, rc, "push", f.Name, n)
		defer body.stop()
		err = s.repo.Blobs().Push(ctx, desc, body)
		if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return body.cause(err)
		}
		return nil
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s (%s): %w", f.Name, f.Digest.Short(), s.explain(err))
	}
	return desc, nil
}

// Get reads and checks the manifest under tag: its bytes must hash to the digest the registry
// names, and every descriptor must carry a BLAKE3. ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, tag string) (*Entry, error) {
	var e *Entry
	err := s.attempt(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*s.opt.timeout())
		defer cancel()
		desc, rc, err := s.repo.FetchReference(ctx, tag)
		if errors.Is(err, errdef.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, maxManifest+1))
		if err != nil {
			return err
		}
		if len(data) > maxManifest || digest.FromBytes(data) != desc.Digest {
			return fmt.Errorf("manifest %s: %w (its bytes do not hash to %s)", tag, ErrIntegrity, desc.Digest)
		}
		var m ocispec.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("manifest %s: %w (not a manifest: %v)", tag, ErrIntegrity, err)
		}
		for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
			if _, err := cache.ParseDigest(d.Annotations[AnnBLAKE3]); err != nil {
				return fmt.Errorf("manifest %s: %w (a descriptor has no BLAKE3: not an entry Rival wrote)", tag, ErrIntegrity)
			}
		}
		e = &Entry{Tag: tag, Digest: desc.Digest, Annotations: m.Annotations, Config: m.Config, Blobs: m.Layers}
		return nil
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrIntegrity) {
		return nil, err
	}
	if err != nil {
		return nil, s.explain(err)
	}
	return e, nil
}

// Config reads an entry's config, verified by sha256 and BLAKE3.
func (s *Store) Config(ctx context.Context, e *Entry) ([]byte, error) {
	var data []byte
	want, _ := cache.ParseDigest(e.Config.Annotations[AnnBLAKE3])
	if e.Config.Size > maxManifest {
		return nil, fmt.Errorf("entry %s: %w (config of %d bytes)", e.Tag, ErrIntegrity, e.Config.Size)
	}
	err := s.attempt(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*s.opt.timeout())
		defer cancel()
		rc, err := s.repo.Blobs().Fetch(ctx, e.Config)
		if err != nil {
			return integrityOf(err)
		}
		defer rc.Close()
		data, err = io.ReadAll(io.LimitReader(rc, e.Config.Size+1))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrIntegrity) {
			return nil, fmt.Errorf("entry %s: config: %w", e.Tag, err)
		}
		return nil, s.explain(err)
	}
	if int64(len(data)) != e.Config.Size || digest.FromBytes(data) != e.Config.Digest || cache.HashBytes(data) != want {
		return nil, fmt.Errorf("entry %s: config: %w: BLAKE3 %s, recorded %s: tampered with or truncated in the store; not used",
			e.Tag, ErrIntegrity, cache.HashBytes(data).Short(), want.Short())
	}
	return data, nil
}

// integrityOf marks a fetch that failed because the registry holds a blob of another size (a
// truncated or swapped file in its storage).
func integrityOf(err error) error {
	if err != nil && strings.Contains(err.Error(), "mismatch Content-Length") {
		return fmt.Errorf("%w (%v)", ErrIntegrity, err)
	}
	return err
}

// Pull copies the entry's i-th blob into the cache c, streaming (constant memory) and hashing it
// with sha256 and BLAKE3 as it comes. The blob is used only when its BLAKE3 is the recorded one;
// anything else is ErrIntegrity. A blob the cache already holds is not transferred. A failed
// transfer is tried again, up to Attempts times.
func (s *Store) Pull(ctx context.Context, c *cache.Cache, e *Entry, i int, compress bool) (cache.Digest, error) {
	desc := e.Blobs[i]
	want := e.BLAKE3(i)
	name := desc.Annotations[AnnName]
	if c.HasBlob(want) {
		return want, nil
	}
	var got cache.Digest
	var sh hash.Hash
	var n int64
	err := s.attempt(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rc, err := s.repo.Blobs().Fetch(ctx, desc)
		if err != nil {
			return integrityOf(err)
		}
		defer rc.Close()
		sh = sha256.New()
		var src io.Reader = rc
		if rs, ok := rc.(io.ReadSeeker); ok {
			src = &resuming{ctx: ctx, rs: rs, size: desc.Size, tries: 5}
		}
		body := s.watch(ctx, cancel, src, "pull", name, desc.Size)
		defer body.stop()
		got, n, err = c.PutReader(io.TeeReader(io.LimitReader(body, desc.Size+1), sh), compress)
		return body.cause(err)
	})
	if err != nil {
		if errors.Is(err, ErrIntegrity) {
			return cache.Digest{}, fmt.Errorf("entry %s: blob %s (%s): %w", e.Tag, want.Short(), name, err)
		}
		return cache.Digest{}, fmt.Errorf("pull %s (%s): %w", name, want.Short(), s.explain(err))
	}
	if got != want || n != desc.Size || digest.NewDigest(digest.SHA256, sh) != desc.Digest {
		return cache.Digest{}, fmt.Errorf("entry %s: blob %s (%s): %w: %d bytes with BLAKE3 %s, recorded %d bytes with BLAKE3 %s: tampered with or truncated in the store; not used",
			e.Tag, want.Short(), name, ErrIntegrity, n, got.Short(), desc.Size, want.Short())
	}
	return want, nil
}
