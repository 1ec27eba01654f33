package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/rivalbench/rival/cache"
)

// PushAction shares an action record and its output blobs (from the cache c) as the entry
// ActionTag(rec.Key). The record travels as the entry's config, without the paths of this host;
// each output is a blob annotated with its BLAKE3 and workspace-relative path. False when the
// store already held the entry.
func (s *Store) PushAction(ctx context.Context, c *cache.Cache, rec cache.Record) (bool, error) {
	rec.Schema = cache.KeySchema
	files := make([]File, len(rec.Outputs))
	for i := range rec.Outputs {
		rec.Outputs[i].AbsPath = ""
		o := rec.Outputs[i]
		files[i] = File{Name: o.Path, Digest: o.Digest, Size: o.Size, Compressed: o.Compressed}
	}
	config, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	ann := map[string]string{AnnKey: rec.Key.String(), AnnTask: rec.Task, "org.opencontainers.image.created": rec.Created.UTC().Format("2006-01-02T15:04:05Z")}
	return s.Push(ctx, c, ActionTag(rec.Key), ArtifactAction, ann, config, MediaRecord, files)
}

// PullAction brings the entry of key into the cache c: its record (returned, not stored, so the
// caller can name where the outputs go on this host) and every output blob, each verified by its
// BLAKE3 before the cache holds it. ErrNotFound when the store has no such entry; ErrIntegrity
// (wrapped, with the entry and blob named) when any part differs from what the entry records.
// outputs is how many outputs the task makes: an entry whose record holds another number is not
// this task's, and is refused (ErrNotTheTask) before any blob moves.
func (s *Store) PullAction(ctx context.Context, c *cache.Cache, key cache.Digest, outputs int) (*cache.Record, error) {
	e, err := s.Get(ctx, ActionTag(key))
	if err != nil {
		return nil, err
	}
	if e.Annotations[AnnKey] != key.String() {
		return nil, fmt.Errorf("entry %s: %w (it is annotated as key %q)", e.Tag, ErrIntegrity, clip(e.Annotations[AnnKey]))
	}
	data, err := s.Config(ctx, e)
	if err != nil {
		return nil, err
	}
	var rec cache.Record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Key != key {
		return nil, fmt.Errorf("entry %s: %w (its record is not the record of this key)", e.Tag, ErrIntegrity)
	}
	if rec.Schema != cache.KeySchema {
		return nil, fmt.Errorf("entry %s: record schema %q, this Rival reads %q: %w", e.Tag, rec.Schema, cache.KeySchema, ErrNotFound)
	}
	if len(rec.Outputs) != outputs {
		return nil, fmt.Errorf("entry %s: %w: its record holds %d outputs and the task makes %d; refused before any blob was pulled", e.Tag, ErrNotTheTask, len(rec.Outputs), outputs)
	}
	if len(rec.Outputs) != len(e.Blobs) {
		return nil, fmt.Errorf("entry %s: %w (%d outputs, %d blobs)", e.Tag, ErrIntegrity, len(rec.Outputs), len(e.Blobs))
	}
	for i, o := range rec.Outputs {
		// A record from elsewhere decides no permission beyond executable or not.
		rec.Outputs[i].Mode = 0o644
		if o.Mode&0o100 != 0 {
			rec.Outputs[i].Mode = 0o755
		}
		if e.BLAKE3(i) != o.Digest || e.Blobs[i].Size != o.Size {
			return nil, fmt.Errorf("entry %s: %w (blob %d is not the output %s its record names)", e.Tag, ErrIntegrity, i, o.Path)
		}
	}
	for i, o := range rec.Outputs {
		if _, err := s.Pull(ctx, c, e, i, o.Compressed); err != nil {
			return nil, err
		}
	}
	return &rec, nil
}

// PushResult shares a training result and its log (blobs of the cache c) as the entry
// ResultTag(result.Digest), annotated with listing, the columns store:ls shows
// (dev.rival.<name>). False when the store already held it.
func (s *Store) PushResult(ctx context.Context, c *cache.Cache, result File, log *File, listing map[string]string) (bool, error) {
	ann := map[string]string{}
	for k, v := range listing {
		ann[AnnPrefix+k] = v
	}
	files := []File{result}
	if log != nil {
		files = append(files, *log)
	}
	config, err := json.Marshal(listing)
	if err != nil {
		return false, err
	}
	return s.Push(ctx, c, ResultTag(result.Digest), ArtifactResult, ann, config, MediaListing, files)
}

// Result is a result entry of the store.
type Result struct {
	*Entry
	// Listing is the entry's listing annotations without their prefix (platform, framework, ...).
	Listing map[string]string
}

// ResultDigest is the BLAKE3 of the result JSON.
func (r Result) ResultDigest() cache.Digest { return r.BLAKE3(0) }

// Results lists every result entry of the store, sorted by date then tag. Entries that are not
// readable as Rival's result entries are returned as problems, not results.
func (s *Store) Results(ctx context.Context) ([]Result, []error, error) {
	tags, err := s.Tags(ctx, "result-")
	if err != nil {
		return nil, nil, err
	}
	var out []Result
	var problems []error
	for _, tag := range tags {
		e, err := s.Get(ctx, tag)
		if errors.Is(err, ErrNotFound) {
			continue // deleted between the listing and now
		}
		if errors.Is(err, ErrIntegrity) {
			problems = append(problems, err)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if len(e.Blobs) == 0 || "result-"+e.BLAKE3(0).String() != tag {
			problems = append(problems, fmt.Errorf("entry %s: %w (its first blob is not the result its tag names)", tag, ErrIntegrity))
			continue
		}
		r := Result{Entry: e, Listing: map[string]string{}}
		for k, v := range e.Annotations {
			if name, ok := strings.CutPrefix(k, AnnPrefix); ok {
				r.Listing[name] = v
			}
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Listing["date"] != out[j].Listing["date"] {
			return out[i].Listing["date"] < out[j].Listing["date"]
		}
		return out[i].Tag < out[j].Tag
	})
	return out, problems, nil
}

// Tags lists the store's tags that start with prefix, sorted. A repository nothing was pushed to
// yet has none.
func (s *Store) Tags(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	ctx, cancel := context.WithTimeout(ctx, 6*s.opt.timeout())
	defer cancel()
	err := s.repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if strings.HasPrefix(t, prefix) {
				out = append(out, t)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errdef.ErrNotFound) && !nameUnknown(err) {
		return nil, s.explain(err)
	}
	sort.Strings(out)
	return out, nil
}

// nameUnknown reports the registry's answer for a repository nothing was pushed to yet.
func nameUnknown(err error) bool {
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		for _, e := range er.Errors {
			if e.Code == errcode.ErrorCodeNameUnknown {
				return true
			}
		}
	}
	return false
}
