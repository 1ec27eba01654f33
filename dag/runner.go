package dag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rivalbench/rival/cache"
)

// schemaSalt changes every key when the meaning of task outputs changes in
// a way the declared inputs do not capture.
const schemaSalt = "rival-tasks/v1"

// secretEnv may never be part of a key, a record or a log.
var secretEnv = map[string]bool{"HF_TOKEN": true, "HUGGING_FACE_HUB_TOKEN": true}

// IsSecretEnv reports whether the environment variable name (any case) holds a credential that must
// never reach a key, a record or a log.
func IsSecretEnv(name string) bool { return secretEnv[strings.ToUpper(name)] }

// Runner executes tasks over a cache.
type Runner struct {
	Cache *cache.Cache
	// Root is the workspace the tasks belong to: paths under it enter keys
	// and records by their workspace-relative names, so two checkouts that
	// share one cache share its hits but each gets its own files.
	Root    string
	Jobs    int       // tasks run in parallel; 0 means the CPU count
	Verbose bool      // explain every task (mage -v)
	Out     io.Writer // messages; standard error when nil
	// Remote, when set, is a shared cache asked after the local one (see Remote).
	Remote Remote

	ran, cached atomic.Int64
	mu          sync.Mutex // guards output lines
	exclusive   sync.Mutex // exclusive tasks within this process
	sem         chan struct{}
	once        sync.Once
}

func (r *Runner) out() io.Writer {
	if r.Out == nil {
		return os.Stderr
	}
	return r.Out
}

// lockedWriter writes under the runner's output lock: tasks running at once
// and the runner's own lines share one writer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (r *Runner) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out(), format, args...)
}

// Counts returns how many tasks ran and how many were cache hits.
func (r *Runner) Counts() (ran, cached int) { return int(r.ran.Load()), int(r.cached.Load()) }

// Summary is the line every invocation ends with.
func (r *Runner) Summary() string {
	ran, cached := r.Counts()
	return fmt.Sprintf("tasks: %d run, %d cached", ran, cached)
}

// Run executes targets and everything they depend on, independent tasks in
// parallel, and returns the first error. Tasks already run by this Runner
// are not run again.
func (r *Runner) Run(ctx context.Context, targets ...*Task) error {
	r.once.Do(func() {
		n := r.Jobs
		if n <= 0 {
			n = runtime.NumCPU()
		}
		r.sem = make(chan struct{}, n)
	})
	if err := checkCycles(targets); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.run(ctx, t)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	return firstError(errs)
}

func firstError(errs []error) error {
	var canceled error
	for _, err := range errs {
		if err == nil {
			continue
		}
		// Prefer the failure that caused the others to be cancelled.
		if errors.Is(err, context.Canceled) {
			if canceled == nil {
				canceled = err
			}
			continue
		}
		return err
	}
	return canceled
}

func checkCycles(targets []*Task) error {
	const (
		visiting = 1
		done     = 2
	)
	mark := map[*Task]int{}
	var visit func(t *Task, path []string) error
	visit = func(t *Task, path []string) error {
		switch mark[t] {
		case visiting:
			return fmt.Errorf("task cycle: %s -> %s", strings.Join(path, " -> "), t.ID)
		case done:
			return nil
		}
		mark[t] = visiting
		for _, d := range t.Deps {
			if err := visit(d, append(path, t.ID)); err != nil {
				return err
			}
		}
		mark[t] = done
		return nil
	}
	for _, t := range targets {
		if err := visit(t, nil); err != nil {
			return err
		}
	}
	return nil
}

var stateMu sync.Mutex

func (t *Task) getState() *taskState {
	stateMu.Lock()
	defer stateMu.Unlock()
	if t.state == nil {
		t.state = &taskState{done: make(chan struct{})}
	}
	return t.state
}

// run executes t once, after its dependencies.
func (r *Runner) run(ctx context.Context, t *Task) error {
	st := t.getState()
	st.once.Do(func() {
		defer close(st.done)
		st.err = r.runOnce(ctx, t, st)
	})
	select {
	case <-st.done:
		return st.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runner) runOnce(ctx context.Context, t *Task, st *taskState) error {
	// Dependencies first, in parallel; no job slot is held while waiting.
	depErrs := make([]error, len(t.Deps))
	var wg sync.WaitGroup
	for i, d := range t.Deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			depErrs[i] = r.run(ctx, d)
		}()
	}
	wg.Wait()
	if err := firstError(depErrs); err != nil {
		return err
	}
	if err := t.prepare(ctx); err != nil {
		return err
	}
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.sem }()
	if t.Exclusive {
		r.exclusive.Lock()
		defer r.exclusive.Unlock()
		// Across processes on this host too: training runs never overlap.
		// (A read-only cache cannot hold the lock: then only this
		// process's runs are kept apart.)
		lk, err := r.Cache.Lock(ctx, "exclusive")
		if err != nil && !cache.IsReadOnly(err) && !cache.IsNoSpace(err) {
			return fmt.Errorf("%s: %w", t.ID, err)
		}
		defer lk.Unlock()
	}
	return r.execute(ctx, t, st)
}

// inputs computes the key parts of t.
func (r *Runner) inputs(t *Task) ([]cache.KeyPart, error) {
	parts := []cache.KeyPart{
		{Kind: "salt", Name: "schema", Value: schemaSalt},
		{Kind: "task", Name: "id", Value: t.ID},
	}
	for k, v := range t.Params {
		parts = append(parts, cache.KeyPart{Kind: "param", Name: k, Value: v})
	}
	for _, name := range t.Env {
		if secretEnv[name] {
			return nil, fmt.Errorf("%s: environment variable %s is a secret and cannot be part of a cache key", t.ID, name)
		}
		parts = append(parts, cache.KeyPart{Kind: "env", Name: name, Value: os.Getenv(name)})
	}
	for k, v := range t.Tools {
		parts = append(parts, cache.KeyPart{Kind: "tool", Name: k, Value: v})
	}
	for _, f := range t.Files {
		d, _, err := r.Cache.TreeDigest(f)
		if err != nil {
			return nil, fmt.Errorf("%s: input %w", t.ID, err)
		}
		parts = append(parts, cache.KeyPart{Kind: "file", Name: r.name(f), Value: d.String()})
	}
	for _, dep := range t.Deps {
		ds := dep.getState()
		for path, d := range ds.outputs {
			parts = append(parts, cache.KeyPart{Kind: "dep", Name: dep.ID + ": " + r.name(path), Value: d.String()})
		}
	}
	// Where the outputs go is part of what was asked: a record made for
	// other paths must not answer for these.
	for i, o := range t.Outputs {
		parts = append(parts, cache.KeyPart{Kind: "output", Name: fmt.Sprintf("%03d", i), Value: r.name(o.Path)})
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Kind != parts[j].Kind {
			return parts[i].Kind < parts[j].Kind
		}
		return parts[i].Name < parts[j].Name
	})
	return parts, nil
}

// Test hooks: storeHook runs between a task's return and the store of its
// outputs, materializeHook before each output is restored.
var (
	storeHook       func()
	materializeHook func(path string)
)

// name is how a path enters keys and records: relative to the workspace
// when it lies inside it, else absolute.
func (r *Runner) name(p string) string {
	if r.Root == "" {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
		return p
	}
	return RelPath(r.Root, p)
}

// lockAll takes the action key's lock and one lock per output, in one
// global order so that two processes never wait on each other. An output's
// lock is named by its place as the kernel sees it (the device and inode of
// its folder, and its name there), not by the path as typed, so two
// spellings of one file (a checkout entered through a symlink, an output
// folder linked to a shared one) take one lock. The output locks make
// run-and-store atomic for a file: a task with another key that writes the
// same file waits until this one's outputs are stored.
//
// A cache where lock files cannot be created (mounted read-only, owned by
// someone else, or out of space) can still answer: lockAll then returns no
// locks and the reason in noLocks, and the caller serves a hit or runs
// without recording.
func (r *Runner) lockAll(ctx context.Context, t *Task, key cache.Digest) (release func(), noLocks, err error) {
	names := []string{key.String()}
	for _, o := range t.Outputs {
		id, err := cache.OutputID(o.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("output %s: %w", o.Path, err)
		}
		names = append(names, "out-"+cache.HashBytes([]byte(id)).String())
	}
	sort.Strings(names)
	var held []*cache.Lock
	release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].Unlock()
		}
	}
	for i, n := range names {
		if i > 0 && n == names[i-1] {
			continue // one path declared twice
		}
		lk, err := r.Cache.Lock(ctx, n)
		if err != nil {
			release()
			if cache.IsReadOnly(err) || cache.IsNoSpace(err) {
				return func() {}, err, nil
			}
			return nil, nil, err
		}
		held = append(held, lk)
	}
	return release, nil, nil
}

func (r *Runner) execute(ctx context.Context, t *Task, st *taskState) error {
	parts, err := r.inputs(t)
	if err != nil {
		return err
	}
	key := cache.ActionKey(parts)
	unlock, noLocks, err := r.lockAll(ctx, t, key)
	if err != nil {
		return fmt.Errorf("%s: %w", t.ID, err)
	}
	defer unlock()
	if noLocks == nil {
		// Temporary files a killed run left beside these outputs are ours
		// to remove: the locks say no other run is writing them now.
		cleanDebris(t.Outputs)
	}

	if !t.Force {
		rec, err := r.Cache.LookupRecord(key)
		fromRemote := false
		if err != nil && r.Remote != nil && r.Remote.Fetch(ctx, t, key) == nil {
			rec, err = r.Cache.LookupRecord(key)
			fromRemote = err == nil
		}
		if err == nil {
			if err := r.materialize(t, rec); err == nil {
				r.Cache.Hit(key)
				st.cached = true
				st.meta = rec.Meta
				st.outputs = r.outputDigests(t, rec)
				r.cached.Add(1)
				if r.Verbose {
					r.printf("cached %s\n", t.ID)
				}
				if r.Remote != nil && !fromRemote {
					r.Remote.Push(ctx, t, *rec)
				}
				return nil
			} else if r.Verbose {
				r.printf("note: %s: cached outputs unusable (%v); running\n", t.ID, err)
			}
		}
	}

	// A lookup or restore cut short by Ctrl-C or SIGTERM is no reason
	// to run the task.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", t.ID, err)
	}
	why := r.explain(t, parts)
	if r.Verbose {
		r.printf("run    %s (%s)\n", t.ID, why)
	} else {
		r.printf("run    %s\n", t.ID)
	}
	for _, o := range t.Outputs {
		cache.ForgetPublished(o.Path)
	}
	start := time.Now()
	log := r.out()
	if _, isFile := log.(*os.File); !isFile {
		// A file takes concurrent writes and stays a file, so progress lines still find the
		// terminal; any other writer is shared under the runner's lock.
		log = lockedWriter{&r.mu, log}
	}
	x := &Exec{Task: t, Log: log, Verbose: r.Verbose, Cache: r.Cache}
	if t.Run == nil {
		return fmt.Errorf("%s: task has no Run function", t.ID)
	}
	if err := t.Run(ctx, x); err != nil {
		return fmt.Errorf("%s: %w", t.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", t.ID, err)
	}
	r.ran.Add(1)
	// What the task left: the files it published (another run's file
	// renamed over one of them since is refused when storing).
	want := make([]string, len(t.Outputs))
	for i, o := range t.Outputs {
		if want[i], err = cache.WrittenID(o.Path); err != nil {
			return fmt.Errorf("%s: output %s: %w", t.ID, o.Path, err)
		}
	}
	if storeHook != nil {
		storeHook()
	}
	rec := cache.Record{Key: key, Task: t.ID, Created: time.Now().UTC(), DurationMS: time.Since(start).Milliseconds(), Inputs: parts}
	// Each output is stored from one open file: the one this process
	// published at its path (another run's file there is refused), read
	// once. Its identity is checked again after the record is complete.
	written := make([]string, len(t.Outputs))
	record := noLocks == nil
	if !record {
		r.printf("warning: %s: cannot lock in the cache (%v); outputs kept, result not cached\n", t.ID, noLocks)
	}
	for i, o := range t.Outputs {
		fi, err := os.Stat(o.Path)
		if err != nil {
			return fmt.Errorf("%s: output %s: %w", t.ID, o.Path, err)
		}
		mode := uint32(fi.Mode().Perm())
		abs := cache.RealPath(o.Path)
		var d cache.Digest
		var n int64
		if record {
			d, n, written[i], err = r.Cache.PutPublished(o.Path, o.Compress, o.Share, want[i])
		}
		if record && err != nil {
			switch {
			case errors.Is(err, cache.ErrChanged):
				r.printf("warning: %s: %s changed after the task wrote it; result not cached\n", t.ID, o.Path)
				record = false
			case cache.IsNoSpace(err) || cache.IsReadOnly(err):
				r.printf("warning: %s: cannot store %s in the cache (%v); outputs kept, result not cached\n", t.ID, o.Path, err)
				record = false
			default:
				return fmt.Errorf("%s: output %s: %w", t.ID, o.Path, err)
			}
		}
		if !record {
			// Dependents still need the digest of what is there.
			if d, n, err = r.Cache.FileDigest(o.Path); err != nil {
				return fmt.Errorf("%s: output %s: %w", t.ID, o.Path, err)
			}
		}
		rec.Outputs = append(rec.Outputs, cache.Output{Path: r.name(o.Path), AbsPath: abs, Digest: d, Size: n, Mode: mode, Compressed: o.Compress})
	}
	if x.meta != nil {
		m, err := json.Marshal(x.meta)
		if err != nil {
			return fmt.Errorf("%s: record summary: %w", t.ID, err)
		}
		rec.Meta = m
	}
	st.meta = rec.Meta
	st.outputs = r.outputDigests(t, &rec)
	if !record {
		return nil
	}
	for i, o := range t.Outputs {
		if id, err := cache.Stat(o.Path); err != nil || id != written[i] {
			r.printf("warning: %s: %s changed after the task wrote it; result not cached\n", t.ID, o.Path)
			return nil
		}
	}
	// Inputs that changed while the task ran make its outputs suspect: the
	// run stands, but it is not recorded, so the next run redoes it.
	after, err := r.inputs(t)
	if err != nil || cache.ActionKey(after) != key {
		r.printf("warning: %s: inputs changed while it ran; result not cached\n", t.ID)
		return nil
	}
	if err := r.Cache.PutRecord(rec); err != nil {
		if cache.IsNoSpace(err) || cache.IsReadOnly(err) {
			r.printf("warning: %s: cannot record the result in the cache (%v); outputs kept, result not cached\n", t.ID, err)
			return nil
		}
		return fmt.Errorf("%s: %w", t.ID, err)
	}
	if r.Remote != nil {
		r.Remote.Push(ctx, t, rec)
	}
	return nil
}

// outputDigests maps the task's own output paths (not the ones the record
// was made with) to their digests, for dependents.
func (r *Runner) outputDigests(t *Task, rec *cache.Record) map[string]cache.Digest {
	m := map[string]cache.Digest{}
	for i, o := range rec.Outputs {
		if i < len(t.Outputs) {
			m[t.Outputs[i].Path] = o.Digest
		}
	}
	return m
}

// materialize puts a record's outputs in place at the task's declared
// paths, skipping files that already hold the right content (a stat, not
// a read, when unchanged). Outputs are restored in their declared order
// (data, then index, then manifest), and the stale ones are first removed
// in the reverse order, so a kill part-way leaves a missing manifest or
// index, never a new .bin beside an old .idx that a reader would trust.
// An output whose blob is gone (trimmed, or dropped as corrupt) but whose
// workspace copy still matches the recorded digest is stored again.
func (r *Runner) materialize(t *Task, rec *cache.Record) error {
	if len(rec.Outputs) != len(t.Outputs) {
		return fmt.Errorf("record has %d outputs, the task declares %d", len(rec.Outputs), len(t.Outputs))
	}
	stale := make([]bool, len(t.Outputs))
	for i, o := range rec.Outputs {
		path := t.Outputs[i].Path
		if d, _, err := r.Cache.FileDigest(path); err == nil && d == o.Digest {
			if !r.Cache.HasBlob(o.Digest) {
				// Adopt the intact workspace copy again.
				if d2, _, err := r.Cache.PutOutput(path, o.Compressed, t.Outputs[i].Share); err != nil || d2 != o.Digest {
					return fmt.Errorf("store %s again: digest %s, want %s (%v)", path, d2.Short(), o.Digest.Short(), err)
				}
			}
			continue
		}
		if !r.Cache.HasBlob(o.Digest) {
			return fmt.Errorf("blob %s of %s: %w", o.Digest.Short(), path, cache.ErrNotFound)
		}
		stale[i] = true
	}
	for i := len(t.Outputs) - 1; i >= 0; i-- {
		if stale[i] {
			if err := os.Remove(t.Outputs[i].Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("replace %s: %w", t.Outputs[i].Path, err)
			}
		}
	}
	for i, o := range rec.Outputs {
		if !stale[i] {
			continue
		}
		path := t.Outputs[i].Path
		mode := os.FileMode(o.Mode)
		if mode == 0 {
			mode = 0o644
		}
		if materializeHook != nil {
			materializeHook(path)
		}
		if err := r.Cache.MaterializeSize(o.Digest, path, mode, o.Size, t.Outputs[i].Share); err != nil {
			return err
		}
		// Seed the stat cache so the next run does not reread it.
		r.Cache.FileDigest(path)
	}
	return nil
}

// cleanDebris removes the temporary files that Rival's writers of these
// outputs leave when killed: for an output NAME, files named
// ".NAME.tmp-rival~<pid>~<random>" (cache.TempPattern), and for a dataset
// PREFIX.bin also the writer's ".PREFIX.idx…" and ".PREFIX.docs…" ones,
// whose writing process is gone. A rename is the last step of every writer,
// so such a file is never a finished output; a file a user named otherwise
// is never touched.
func cleanDebris(outs []Output) {
	for _, o := range outs {
		dir, base := filepath.Split(o.Path)
		if dir == "" {
			dir = "."
		}
		bases := []string{base}
		if p, ok := strings.CutSuffix(base, ".bin"); ok {
			bases = append(bases, p+".idx", p+".docs")
		}
		if p, ok := strings.CutSuffix(base, ".idx"); ok {
			bases = append(bases, p+".bin", p+".docs")
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			for _, b := range bases {
				if pid, ok := cache.ParseTemp(b, e.Name()); ok && cache.WriterGone(pid) {
					os.Remove(filepath.Join(dir, e.Name()))
					break
				}
			}
		}
	}
}

// explain says which inputs changed since the last recorded run of the
// same task.
func (r *Runner) explain(t *Task, now []cache.KeyPart) string {
	if t.Force {
		return "forced"
	}
	prev, ok := r.Cache.LastInputs(t.ID)
	if !ok {
		return "no earlier run"
	}
	return diffInputs(prev, now)
}

func partLabel(p cache.KeyPart) string {
	switch p.Kind {
	case "file":
		return filepath.Base(p.Name)
	case "dep":
		// "<task id>: <output path>": the output's file name is enough to read.
		if task, path, ok := strings.Cut(p.Name, ": "); ok {
			return "upstream " + task + ": " + filepath.Base(path)
		}
		return "upstream " + p.Name
	case "env":
		return "env " + p.Name
	case "tool":
		return "tool " + p.Name
	default:
		return p.Name
	}
}

func shortValue(p cache.KeyPart) string {
	if d, ok := digestOf(p); ok {
		return d.Short()
	}
	if r := []rune(p.Value); len(r) > 40 {
		return string(r[:37]) + "…"
	}
	return p.Value
}

// digestOf is the digest that p, a file or upstream output, is given by; false for other parts.
func digestOf(p cache.KeyPart) (cache.Digest, bool) {
	if p.Kind != "file" && p.Kind != "dep" {
		return cache.Digest{}, false
	}
	d, err := cache.ParseDigest(p.Value)
	return d, err == nil
}

// shortPair is the before and after of a changed input as shortValue shows
// them, made longer when both would read the same (two digests sharing
// their first ShortLen digits, two long values sharing their first 37
// characters): then both are shown to 4 characters past the first one
// that differs, so the line never says "3f2a… → 3f2a…".
func shortPair(o, p cache.KeyPart) (string, string) {
	a, b := shortValue(o), shortValue(p)
	if a != b || o.Value == p.Value {
		return a, b
	}
	ra, rb := []rune(o.Value), []rune(p.Value)
	i := 0
	for i < len(ra) && i < len(rb) && ra[i] == rb[i] {
		i++
	}
	cut := func(r []rune) string {
		if n := i + 4; n < len(r) {
			_, od := digestOf(o)
			if _, pd := digestOf(p); od && pd {
				return string(r[:n])
			}
			return string(r[:n]) + "…"
		}
		return string(r)
	}
	return cut(ra), cut(rb)
}

func diffInputs(prev, now []cache.KeyPart) string {
	type id struct{ kind, name string }
	old := map[id]cache.KeyPart{}
	for _, p := range prev {
		old[id{p.Kind, p.Name}] = p
	}
	var changes []string
	seen := map[id]bool{}
	for _, p := range now {
		k := id{p.Kind, p.Name}
		seen[k] = true
		o, ok := old[k]
		switch {
		case !ok && p.Kind == "param":
			changes = append(changes, fmt.Sprintf("new parameter %s=%s", p.Name, shortValue(p)))
		case !ok:
			changes = append(changes, fmt.Sprintf("new input %s", partLabel(p)))
		case o.Value != p.Value:
			before, after := shortPair(o, p)
			changes = append(changes, fmt.Sprintf("%s: %s → %s", partLabel(p), before, after))
		}
	}
	for _, p := range prev {
		if !seen[id{p.Kind, p.Name}] {
			changes = append(changes, fmt.Sprintf("%s removed", partLabel(p)))
		}
	}
	if len(changes) == 0 {
		return "inputs unchanged, but no usable cached result"
	}
	return strings.Join(changes, "; ")
}

// IsCached reports whether t would be a cache hit now. Its dependencies
// must already have run through this Runner.
func (r *Runner) IsCached(t *Task) bool {
	if t.Force || t.prepare(context.Background()) != nil {
		return false
	}
	parts, err := r.inputs(t)
	if err != nil {
		return false
	}
	_, err = r.Cache.GetRecord(cache.ActionKey(parts))
	return err == nil
}

// prepare runs t.Prepare once.
func (t *Task) prepare(ctx context.Context) error {
	st := t.getState()
	st.prepOnce.Do(func() {
		if t.Prepare != nil {
			if err := t.Prepare(ctx); err != nil {
				st.prepErr = fmt.Errorf("%s: %w", t.ID, err)
			}
		}
	})
	return st.prepErr
}
