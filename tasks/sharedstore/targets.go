package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/internal/lines"
	"github.com/rivalbench/rival/store"
)

// open opens the store of o for the store targets, where a store is the point: errors stop them.
func open(ctx context.Context, o Options) (*Remote, *store.Store, error) {
	r, err := New(o)
	if err != nil {
		return nil, nil, err
	}
	if r == nil {
		return nil, nil, errors.New("RIVAL_STORE is not set: point it at a registry, oci://HOST[:PORT]/REPOSITORY (docs/store.md)")
	}
	st, err := store.Open(ctx, r.loc, r.options())
	if err != nil {
		return nil, nil, err
	}
	return r, st, nil
}

// List prints every result of the store to out (store:ls), its warnings to o.Out.
func List(ctx context.Context, o Options, out io.Writer) error {
	r, st, err := open(ctx, o)
	if err != nil {
		return err
	}
	rs, problems, err := st.Results(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPLATFORM\tFRAMEWORK\tMODEL\tDATASET\tDATE\tHOST\tTOKENS/S/GPU")
	for _, res := range rs {
		l := res.Listing
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", res.ResultDigest().Short(), dash(l["platform"]), dash(l["framework"]), dash(l["model"]),
			dash(l["dataset"]), dash(l["date"]), dash(l["host"]), dash(l["tokens_per_second_per_gpu"]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range problems {
		r.printf("warning: %s\n", lines.Printable(p.Error()))
	}
	r.printf("store %s: %s\n", st.Location, english.Plural(len(rs), "result"))
	return nil
}

// dash is a listing's value as store:ls shows it: "-" when absent, and never a character a
// terminal would act on (an annotation is whatever the pushing host wrote).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return lines.Printable(s)
}

// safeName keeps a name from the store usable as a file name: what a run name holds, nothing that
// could leave the folder.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Pull copies every result of the store and its log into dir (store:pull, OUTPUT_DIR/store):
// <name>_<id>.json and logs/<name>_<id>.log, each verified by its BLAKE3. Its summary names dir
// relative to root.
func Pull(ctx context.Context, o Options, dir, root string) error {
	rm, st, err := open(ctx, o)
	if err != nil {
		return err
	}
	rs, problems, err := st.Results(ctx)
	if err != nil {
		return err
	}
	for _, p := range problems {
		rm.printf("warning: %s\n", lines.Printable(p.Error()))
	}
	copied, bad := 0, len(problems)
	for _, r := range rs {
		name := r.Listing["name"]
		if !safeName.MatchString(name) {
			name = "result"
		}
		name += "_" + r.ResultDigest().Short()
		dsts := []string{filepath.Join(dir, name+".json"), filepath.Join(dir, "logs", name+".log")}
		for i := range r.Blobs {
			if i >= len(dsts) {
				break
			}
			d, err := st.Pull(ctx, o.Cache, r.Entry, i, true)
			if errors.Is(err, store.ErrIntegrity) {
				rm.printf("warning: %s\n", lines.Printable(err.Error()))
				bad++
				break
			}
			if err != nil {
				return err
			}
			if err := o.Cache.Materialize(d, dsts[i], 0o644); err != nil {
				return err
			}
			if i == 0 {
				copied++
			}
		}
	}
	rm.printf("store:pull: %s from %s in %s\n", english.Plural(copied, "result"), st.Location, dag.RelPath(root, dir))
	if bad > 0 {
		return fmt.Errorf("store:pull: %d entries of %s are damaged (tampered with or truncated) and were not copied", bad, st.Location)
	}
	return nil
}

// RefPrefix names a result of the store in verify:result: store:<ID>, the ID store:ls shows
// (any unambiguous prefix of the result's BLAKE3, at least 8 hex digits).
const RefPrefix = "store:"

// ReadResult returns the result a store:<ID> reference names, verified by its BLAKE3.
func ReadResult(ctx context.Context, o Options, ref string) ([]byte, error) {
	id := strings.TrimPrefix(ref, RefPrefix)
	if len(id) < 8 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%s: name a result by at least 8 lowercase hex digits of the ID store:ls shows", ref)
	}
	_, st, err := open(ctx, o)
	if err != nil {
		return nil, err
	}
	tags, err := st.Tags(ctx, store.ResultTag(cache.Digest{})[:len("result-")]+id)
	if err != nil {
		return nil, err
	}
	switch len(tags) {
	case 0:
		return nil, fmt.Errorf("%s: the store %s holds no result with that ID (store:ls lists them)", ref, st.Location)
	case 1:
	default:
		return nil, fmt.Errorf("%s: %d results of the store start with that ID: give more digits", ref, len(tags))
	}
	e, err := st.Get(ctx, tags[0])
	if err != nil {
		return nil, err
	}
	d, err := st.Pull(ctx, o.Cache, e, 0, true)
	if err != nil {
		return nil, err
	}
	if store.ResultTag(d) != tags[0] {
		return nil, fmt.Errorf("%s: %w (the entry's result is not the one its tag names)", ref, store.ErrIntegrity)
	}
	return o.Cache.ReadBlob(d)
}
