package sharedstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/internal/lines"
	"github.com/rivalbench/rival/internal/live"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/store"
)

// Options say which store to use and how: RIVAL_STORE and its settings, the local cache and where
// messages go.
type Options struct {
	Location string        // RIVAL_STORE: oci://HOST[:PORT]/REPOSITORY; "" for none
	Insecure bool          // RIVAL_STORE_INSECURE
	CAFile   string        // RIVAL_STORE_CA
	Timeout  time.Duration // RIVAL_STORE_TIMEOUT
	Cache    *cache.Cache
	Out      io.Writer
}

// Remote is RIVAL_STORE as the runner's dag.Remote: asked after the local cache, offered
// every record. It opens the store on first use; a store that is down, slow or refuses the
// credentials gets one warning and is left alone for the rest of the invocation, so the run goes
// on with the local cache.
type Remote struct {
	o        Options
	loc      store.Location
	once     sync.Once
	st       *store.Store
	disabled atomic.Bool
	warnOnce sync.Once
	// readOnly: the registry refused a push; this host still pulls (a laptop with pull rights).
	readOnly     atomic.Bool
	readOnlyOnce sync.Once
	live         *live.Line
	liveMu       sync.Mutex
}

// New is the remote of o.Location; nil when it is not set. A value that is not an oci:// location
// is an error: a typo must not silently leave a team's hosts unshared.
func New(o Options) (*Remote, error) {
	v := o.Location
	if v == "" {
		return nil, nil
	}
	loc, err := store.ParseLocation(v)
	if err != nil {
		return nil, fmt.Errorf("RIVAL_STORE: %w", err)
	}
	return &Remote{o: o, loc: loc, live: live.New(o.Out)}, nil
}

// dockerCredential reads host's credentials from the Docker config, as image:push does. Nothing of
// them is ever printed.
func dockerCredential(ctx context.Context, host string) (store.Credential, error) {
	enc, err := container.RegistryAuth(ctx, host)
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
func (r *Remote) options() store.Options {
	return store.Options{Insecure: r.o.Insecure, CAFile: r.o.CAFile, Credential: dockerCredential,
		Timeout: r.o.Timeout, Progress: r.progress}
}

// printf writes a message for the user.
func (r *Remote) printf(format string, args ...any) { fmt.Fprintf(r.o.Out, format, args...) }

// progress shows a transfer's bytes and rate on a terminal.
func (r *Remote) progress(p store.Progress) {
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
func (r *Remote) get(ctx context.Context) *store.Store {
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
func (r *Remote) fail(err error) {
	r.disabled.Store(true)
	r.warnOnce.Do(func() {
		r.printf("warning: %s; going on with the local cache only\n", lines.Printable(err.Error()))
	})
}

// problem reports an error of one entry (tampered, not the task's, or a local blob that is
// corrupt); the store stays in use for the others. Any other error disables the store.
func (r *Remote) problem(what string, err error) {
	if errors.Is(err, store.ErrIntegrity) || errors.Is(err, store.ErrNotTheTask) || strings.Contains(err.Error(), "does not match its digest") {
		r.printf("warning: store %s: %s: %s\n", r.loc, what, lines.Printable(err.Error()))
		return
	}
	r.fail(err)
}

// Fetch implements dag.Remote: the entry of key, verified, into the local cache, its record naming
// this host's output paths.
func (r *Remote) Fetch(ctx context.Context, t *dag.Task, key cache.Digest) error {
	st := r.get(ctx)
	if st == nil {
		return store.ErrNotFound
	}
	start := time.Now()
	rec, err := st.PullAction(ctx, r.o.Cache, key, len(t.Outputs))
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err != nil {
		if ctx.Err() == nil {
			r.problem(t.ID+" not used, the task runs instead", err)
		}
		return err
	}
	var size int64
	for i := range rec.Outputs {
		rec.Outputs[i].AbsPath, _ = filepath.Abs(t.Outputs[i].Path)
		size += rec.Outputs[i].Size
	}
	if err := r.o.Cache.PutRecord(*rec); err != nil {
		return err
	}
	r.printf("store  %s: pulled %s in %s\n", t.ID, sizeText(size), time.Since(start).Round(time.Millisecond))
	return nil
}

// Push implements dag.Remote: the record's entry, and for a training run its result entry.
func (r *Remote) Push(ctx context.Context, t *dag.Task, rec cache.Record) {
	st := r.get(ctx)
	if st == nil || ctx.Err() != nil || r.readOnly.Load() {
		return
	}
	start := time.Now()
	pushed, err := st.PushAction(ctx, r.o.Cache, rec)
	if errors.Is(err, store.ErrUnauthorized) {
		r.readOnly.Store(true)
		r.readOnlyOnce.Do(func() {
			r.printf("warning: %s; this host only pulls from the store\n", lines.Printable(err.Error()))
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
		r.printf("store  %s: pushed %s in %s\n", t.ID, sizeText(size), time.Since(start).Round(time.Millisecond))
	}
	if t.Family() == "train" && len(rec.Outputs) == 2 {
		if err := r.pushResult(ctx, st, rec); err != nil && ctx.Err() == nil {
			r.problem(t.ID+": result not shared", err)
		}
	}
}

// pushResult shares a training run's result and log as a result entry, listed by store:ls.
func (r *Remote) pushResult(ctx context.Context, st *store.Store, rec cache.Record) error {
	data, err := r.o.Cache.ReadBlob(rec.Outputs[0].Digest)
	if err != nil {
		return err
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("result %s: %w", rec.Outputs[0].Path, err)
	}
	listing := resultListing(&res, strings.TrimSuffix(filepath.Base(rec.Outputs[0].Path), ".json"))
	o, l := rec.Outputs[0], rec.Outputs[1]
	_, err = st.PushResult(ctx, r.o.Cache, store.File{Name: "result", Digest: o.Digest, Size: o.Size, Compressed: true},
		&store.File{Name: "log", Digest: l.Digest, Size: l.Size, Compressed: true}, listing)
	return err
}

// resultListing is what store:ls shows of a result, carried as its entry's annotations.
func resultListing(res *result.Result, name string) map[string]string {
	m := map[string]string{
		"name":                      name,
		"platform":                  result.Text(res.Platform),
		"framework":                 res.Framework.Name,
		"model":                     result.Text(res.Model.Name),
		"dataset":                   result.Text(res.Dataset.Name),
		"tokens_per_second_per_gpu": strconv.FormatFloat(res.PerformanceMetrics.TokensPerSecondPerGPU, 'f', 1, 64),
	}
	if p := res.Provenance; p != nil {
		m["date"], m["host"] = p.StartedAt, p.Host
	}
	return m
}

// Results is every result of the store as bytes, each verified by its BLAKE3 and kept in the
// local cache, for compare. A store that cannot be reached gives a warning and no results; a nil
// Remote (no store) gives none.
func (r *Remote) Results(ctx context.Context) ([][]byte, error) {
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
		d, err := st.Pull(ctx, r.o.Cache, res.Entry, 0, true)
		if err != nil {
			r.problem("a result entry is not used", err)
			if !errors.Is(err, store.ErrIntegrity) {
				return out, nil
			}
			continue
		}
		if data, err := r.o.Cache.ReadBlob(d); err == nil {
			out = append(out, data)
		}
	}
	return out, nil
}
