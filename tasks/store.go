package tasks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/internal/lines"
	"github.com/rivalbench/rival/internal/live"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/store"
)

// dockerCredential reads host's credentials from the Docker config, as image:push does. Nothing of
// them is ever printed.
func dockerCredential(ctx context.Context, host string) (store.Credential, error) {
	enc, err := container.RegistryAuth(host)
	if err != nil || enc == "" {
		return store.Credential{}, err
	}
	raw, err := base64.URLEncoding.DecodeString(enc)
	if err != nil {
		return store.Credential{}, fmt.Errorf("docker config: the credentials for %s are unreadable: run `docker login %s` again", host, host)
	}
	var ac struct {
		Username, Password string
		IdentityToken      string `json:"identitytoken"`
	}
	if err := json.Unmarshal(raw, &ac); err != nil {
		return store.Credential{}, fmt.Errorf("docker config: the credentials for %s are unreadable: run `docker login %s` again", host, host)
	}
	return store.Credential{Username: ac.Username, Password: ac.Password, IdentityToken: ac.IdentityToken}, nil
}

// options are the store's settings.
func (r *storeRemote) options() store.Options {
	s := r.w.env
	return store.Options{Insecure: s.storeInsecure(), CAFile: s.storeCA(), Credential: dockerCredential,
		Timeout: s.storeTimeout(), Progress: r.progress}
}

// progress shows a transfer's bytes and rate on a terminal.
func (r *storeRemote) progress(p store.Progress) {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if p.Done >= p.Total {
		r.live.Clear()
		return
	}
	rate := float64(p.Done) / max(p.Elapsed.Seconds(), 1e-3)
	r.live.Update(fmt.Sprintf("store %s %s: %s of %s, %s/s, %s left", p.Op, lines.Truncate(p.Name, 50), sizeText(p.Done), sizeText(p.Total),
		sizeText(int64(rate)), live.ETA(float64(p.Done), float64(p.Total), p.Elapsed)))
}

// sizeText is a byte count for people: 912 B, 3.4 MiB, 1.0 GiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// get opens the store once; nil when it is unusable (and then said once).
func (r *storeRemote) get(ctx context.Context) *store.Store {
	if r.disabled.Load() {
		return nil
	}
	r.once.Do(func() {
		st, err := store.Open(ctx, r.loc, r.options())
		if err != nil {
			r.fail(err)
			return
		}
		r.st = st
	})
	if r.disabled.Load() {
		return nil
	}
	return r.st
}

// fail disables the store for this invocation with one warning.
func (r *storeRemote) fail(err error) {
	r.disabled.Store(true)
	r.warnOnce.Do(func() {
		r.w.printf("warning: %v; going on with the local cache only\n", err)
	})
}

// problem reports an error of one entry (tampered, or a local blob that is corrupt); the store
// stays in use for the others. Any other error disables the store.
func (r *storeRemote) problem(what string, err error) {
	if errors.Is(err, store.ErrIntegrity) || strings.Contains(err.Error(), "does not match its digest") {
		r.w.printf("warning: store %s: %s: %v\n", r.loc, what, err)
		return
	}
	r.fail(err)
}

// Fetch implements dag.Remote: the entry of key, verified, into the local cache, its record naming
// this host's output paths.
func (r *storeRemote) Fetch(ctx context.Context, t *dag.Task, key cache.Digest) error {
	st := r.get(ctx)
	if st == nil {
		return store.ErrNotFound
	}
	start := time.Now()
	rec, err := st.PullAction(ctx, r.w.cache, key)
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err != nil {
		if ctx.Err() == nil {
			r.problem(t.ID+" not used, the task runs instead", err)
		}
		return err
	}
	if len(rec.Outputs) != len(t.Outputs) {
		return store.ErrNotFound
	}
	var size int64
	for i := range rec.Outputs {
		rec.Outputs[i].AbsPath, _ = filepath.Abs(t.Outputs[i].Path)
		size += rec.Outputs[i].Size
	}
	if err := r.w.cache.PutRecord(*rec); err != nil {
		return err
	}
	r.w.printf("store  %s: pulled %s in %s\n", t.ID, sizeText(size), time.Since(start).Round(time.Millisecond))
	return nil
}

// Push implements dag.Remote: the record's entry, and for a training run its result entry.
func (r *storeRemote) Push(ctx context.Context, t *dag.Task, rec cache.Record) {
	st := r.get(ctx)
	if st == nil || ctx.Err() != nil || r.readOnly.Load() {
		return
	}
	start := time.Now()
	pushed, err := st.PushAction(ctx, r.w.cache, rec)
	if errors.Is(err, store.ErrUnauthorized) {
		r.readOnly.Store(true)
		r.readOnlyOnce.Do(func() {
			r.w.printf("warning: %v; this host only pulls from the store\n", err)
		})
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			r.problem(t.ID+" not shared", err)
		}
		return
	}
	if pushed {
		var size int64
		for _, o := range rec.Outputs {
			size += o.Size
		}
		r.w.printf("store  %s: pushed %s in %s\n", t.ID, sizeText(size), time.Since(start).Round(time.Millisecond))
	}
	if t.Family() == "train" && len(rec.Outputs) == 2 {
		if err := r.pushResult(ctx, st, rec); err != nil && ctx.Err() == nil {
			r.problem(t.ID+": result not shared", err)
		}
	}
}

// pushResult shares a training run's result and log as a result entry, listed by store:ls.
func (r *storeRemote) pushResult(ctx context.Context, st *store.Store, rec cache.Record) error {
	data, err := r.w.cache.ReadBlob(rec.Outputs[0].Digest)
	if err != nil {
		return err
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("result %s: %w", rec.Outputs[0].Path, err)
	}
	listing := resultListing(&res, strings.TrimSuffix(filepath.Base(rec.Outputs[0].Path), ".json"))
	o, l := rec.Outputs[0], rec.Outputs[1]
	_, err = st.PushResult(ctx, r.w.cache, store.File{Name: "result", Digest: o.Digest, Size: o.Size, Compressed: true},
		&store.File{Name: "log", Digest: l.Digest, Size: l.Size, Compressed: true}, listing)
	return err
}

// resultListing is what store:ls shows of a result, carried as its entry's annotations.
func resultListing(res *result.Result, name string) map[string]string {
	m := map[string]string{
		"name":                      name,
		"platform":                  strOrEmpty(res.Platform),
		"framework":                 res.Framework.Name,
		"model":                     strOrEmpty(res.Model.Name),
		"dataset":                   strOrEmpty(res.Dataset.Name),
		"tokens_per_second_per_gpu": strconv.FormatFloat(res.PerformanceMetrics.TokensPerSecondPerGPU, 'f', 1, 64),
	}
	if p := res.Provenance; p != nil {
		m["date"], m["host"] = p.StartedAt, p.Host
	}
	return m
}

// openStore opens RIVAL_STORE for the store targets, where a store is the point: errors stop them.
func (w *Workspace) openStore(ctx context.Context) (*storeRemote, *store.Store, error) {
	r, err := newStoreRemote(w)
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

// storeResults is every result of the store as bytes, each verified by its BLAKE3 and kept in the
// local cache, for compare. A store that cannot be reached gives a warning and no results.
func (w *Workspace) storeResults(ctx context.Context) ([][]byte, error) {
	r := w.remote
	if r == nil {
		return nil, nil
	}
	st := r.get(ctx)
	if st == nil {
		return nil, nil
	}
	rs, problems, err := st.Results(ctx)
	if err != nil {
		r.fail(err)
		return nil, nil
	}
	for _, p := range problems {
		r.problem("a result entry is not used", p)
	}
	var out [][]byte
	for _, res := range rs {
		d, err := st.Pull(ctx, w.cache, res.Entry, 0, true)
		if err != nil {
			r.problem("a result entry is not used", err)
			if !errors.Is(err, store.ErrIntegrity) {
				return out, nil
			}
			continue
		}
		if data, err := w.cache.ReadBlob(d); err == nil {
			out = append(out, data)
		}
	}
	return out, nil
}

// StoreListTarget prints every result of the store (store:ls).
func (w *Workspace) StoreListTarget(ctx context.Context, out io.Writer) error {
	_, st, err := w.openStore(ctx)
	if err != nil {
		return err
	}
	rs, problems, err := st.Results(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPLATFORM\tFRAMEWORK\tMODEL\tDATASET\tDATE\tHOST\tTOKENS/S/GPU")
	for _, r := range rs {
		l := r.Listing
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ResultDigest().Short(), dash(l["platform"]), dash(l["framework"]), dash(l["model"]),
			dash(l["dataset"]), dash(l["date"]), dash(l["host"]), dash(l["tokens_per_second_per_gpu"]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range problems {
		w.printf("warning: %v\n", p)
	}
	w.printf("store %s: %s\n", st.Location, english.Plural(len(rs), "result"))
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// safeName keeps a name from the store usable as a file name: what a run name holds, nothing that
// could leave the folder.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// StorePullTarget copies every result of the store and its log into OUTPUT_DIR/store
// (store:pull): <name>_<id>.json and logs/<name>_<id>.log, each verified by its BLAKE3.
func (w *Workspace) StorePullTarget(ctx context.Context) error {
	_, st, err := w.openStore(ctx)
	if err != nil {
		return err
	}
	rs, problems, err := st.Results(ctx)
	if err != nil {
		return err
	}
	for _, p := range problems {
		w.printf("warning: %v\n", p)
	}
	dir := w.path("OUTPUT_DIR", "store")
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
			d, err := st.Pull(ctx, w.cache, r.Entry, i, true)
			if errors.Is(err, store.ErrIntegrity) {
				w.printf("warning: %v\n", err)
				bad++
				break
			}
			if err != nil {
				return err
			}
			if err := w.cache.Materialize(d, dsts[i], 0o644); err != nil {
				return err
			}
			if i == 0 {
				copied++
			}
		}
	}
	w.printf("store:pull: %s from %s in %s\n", english.Plural(copied, "result"), st.Location, rel(w.root, dir))
	if bad > 0 {
		return fmt.Errorf("store:pull: %d entries of %s are damaged (tampered with or truncated) and were not copied", bad, st.Location)
	}
	return nil
}

// storeRefPrefix names a result of the store in verify:result: store:<ID>, the ID store:ls shows
// (any unambiguous prefix of the result's BLAKE3, at least 8 hex digits).
const storeRefPrefix = "store:"

// readStoreResult returns the result a store:<ID> reference names, verified by its BLAKE3.
func (w *Workspace) readStoreResult(ctx context.Context, ref string) ([]byte, error) {
	id := strings.TrimPrefix(ref, storeRefPrefix)
	if len(id) < 8 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%s: name a result by at least 8 lowercase hex digits of the ID store:ls shows", ref)
	}
	_, st, err := w.openStore(ctx)
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
	d, err := st.Pull(ctx, w.cache, e, 0, true)
	if err != nil {
		return nil, err
	}
	if store.ResultTag(d) != tags[0] {
		return nil, fmt.Errorf("%s: %w (the entry's result is not the one its tag names)", ref, store.ErrIntegrity)
	}
	return w.cache.ReadBlob(d)
}

// readResultArg reads a verify:result argument: a file, or store:<ID>.
func (w *Workspace) readResultArg(p string) ([]byte, error) {
	if strings.HasPrefix(p, storeRefPrefix) {
		return w.readStoreResult(context.Background(), p)
	}
	return cache.ReadFileLimit(context.Background(), p, compare.MaxResultBytes)
}
