package tasks

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

// Runner executes tasks over a cache.
type Runner struct {
	Cache   *cache.Cache
	Jobs    int       // tasks run in parallel; 0 means the CPU count
	Verbose bool      // explain every task (mage -v)
	Out     io.Writer // messages; standard error when nil

	ran, cached atomic.Int64
	mu          sync.Mutex // guards output lines
	exclusive   sync.Mutex // exclusive tasks within this process
	sem         chan struct{}
	once        sync.Once
}

type taskState struct {
	prepOnce sync.Once
	prepErr  error
	once     sync.Once
	done     chan struct{}
	err      error
	cached   bool
	meta     json.RawMessage
	// outputs maps each declared output path to its digest, for dependents.
	outputs map[string]cache.Digest
}

func (r *Runner) out() io.Writer {
	if r.Out == nil {
		return os.Stderr
	}
	return r.Out
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
		lk, err := r.Cache.Lock(ctx, "exclusive")
		if err != nil {
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
		parts = append(parts, cache.KeyPart{Kind: "file", Name: f, Value: string(d)})
	}
	for _, dep := range t.Deps {
		ds := dep.getState()
		for path, d := range ds.outputs {
			parts = append(parts, cache.KeyPart{Kind: "dep", Name: dep.ID + ": " + path, Value: string(d)})
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Kind != parts[j].Kind {
			return parts[i].Kind < parts[j].Kind
		}
		return parts[i].Name < parts[j].Name
	})
	return parts, nil
}

func (r *Runner) execute(ctx context.Context, t *Task, st *taskState) error {
	parts, err := r.inputs(t)
	if err != nil {
		return err
	}
	key := cache.ActionKey(parts)
	lk, err := r.Cache.Lock(ctx, string(key))
	if err != nil {
		return fmt.Errorf("%s: %w", t.ID, err)
	}
	defer lk.Unlock()

	if !t.Force {
		if rec, err := r.Cache.GetRecord(key); err == nil {
			if err := r.materialize(rec); err == nil {
				r.Cache.Hit(key)
				st.cached = true
				st.meta = rec.Meta
				st.outputs = outputDigests(rec)
				r.cached.Add(1)
				if r.Verbose {
					r.printf("cached %s\n", t.ID)
				}
				return nil
			} else if r.Verbose {
				r.printf("note: %s: cached outputs unusable (%v); running\n", t.ID, err)
			}
		}
	}

	why := r.explain(t, parts)
	if r.Verbose {
		r.printf("run    %s (%s)\n", t.ID, why)
	} else {
		r.printf("run    %s\n", t.ID)
	}
	start := time.Now()
	x := &Exec{Task: t, Log: r.out(), Verbose: r.Verbose, Cache: r.Cache}
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
	rec := cache.Record{Key: key, Task: t.ID, Created: time.Now().UTC(), DurationMS: time.Since(start).Milliseconds(), Inputs: parts}
	for _, o := range t.Outputs {
		d, n, err := r.Cache.PutOutput(o.Path, o.Compress)
		if err != nil {
			return fmt.Errorf("%s: output %s: %w", t.ID, o.Path, err)
		}
		abs, _ := filepath.Abs(o.Path)
		fi, _ := os.Stat(o.Path)
		mode := uint32(0o644)
		if fi != nil {
			mode = uint32(fi.Mode().Perm())
		}
		rec.Outputs = append(rec.Outputs, cache.Output{Path: o.Path, AbsPath: abs, Digest: d, Size: n, Mode: mode, Compressed: o.Compress})
	}
	if x.meta != nil {
		m, err := json.Marshal(x.meta)
		if err != nil {
			return fmt.Errorf("%s: record summary: %w", t.ID, err)
		}
		rec.Meta = m
	}
	st.meta = rec.Meta
	st.outputs = outputDigests(&rec)
	// Inputs that changed while the task ran make its outputs suspect: the
	// run stands, but it is not recorded, so the next run redoes it.
	after, err := r.inputs(t)
	if err != nil || cache.ActionKey(after) != key {
		r.printf("warning: %s: inputs changed while it ran; result not cached\n", t.ID)
		return nil
	}
	if err := r.Cache.PutRecord(rec); err != nil {
		return fmt.Errorf("%s: %w", t.ID, err)
	}
	return nil
}

func outputDigests(rec *cache.Record) map[string]cache.Digest {
	m := map[string]cache.Digest{}
	for _, o := range rec.Outputs {
		m[o.Path] = o.Digest
	}
	return m
}

// materialize puts a record's outputs in place, skipping files that already
// hold the right content (a stat, not a read, when unchanged).
func (r *Runner) materialize(rec *cache.Record) error {
	for _, o := range rec.Outputs {
		if d, _, err := r.Cache.FileDigest(o.Path); err == nil && d == o.Digest {
			continue
		}
		mode := os.FileMode(o.Mode)
		if mode == 0 {
			mode = 0o644
		}
		if err := r.Cache.Materialize(o.Digest, o.Path, mode); err != nil {
			return err
		}
		// Seed the stat cache so the next run does not reread it.
		r.Cache.FileDigest(o.Path)
	}
	return nil
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
	if p.Kind == "file" || p.Kind == "dep" {
		if len(p.Value) > 4 {
			return p.Value[:4] + "…"
		}
	}
	if len(p.Value) > 40 {
		return p.Value[:37] + "…"
	}
	return p.Value
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
			changes = append(changes, fmt.Sprintf("%s: %s → %s", partLabel(p), shortValue(o), shortValue(p)))
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
