package dag

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/rivalbench/rival/cache"
)

// Output is a file a task produces.
type Output struct {
	Path string
	// Compress stores the blob with zstd: worth it for text, JSON and logs,
	// not for token streams.
	Compress bool
	// Share lets an uncompressed output and its blob share their bytes (a
	// clone, else a read-only hard link, where the file system allows; see
	// docs/cache.md): for large outputs nobody edits, such as datasets.
	// Others (figures, archives) stay ordinary writable copies.
	Share bool
}

// Task is one node of the DAG.
type Task struct {
	// ID names the task and its arguments ("encode bc llama"); the first word
	// is the task family. Two tasks with one ID are the same task.
	ID   string
	Deps []*Task
	// Files are inputs hashed by content: files, or directories as trees.
	Files []string
	// Params are the settings that change the output, and only those.
	Params map[string]string
	// Env lists environment variables whose values are part of the key.
	// Secrets (HF_TOKEN) are refused: they must never reach a key.
	Env []string
	// Tools are tool names and versions or digests (an encoder version, a
	// script digest).
	Tools   map[string]string
	Outputs []Output
	// Exclusive tasks (GPU training) never overlap each other, on this host.
	Exclusive bool
	// Force reruns the task even when its record exists.
	Force bool
	// Prepare, when set, runs after the dependencies and before the key is
	// computed, for inputs only known once upstream outputs exist (a
	// dataset's fingerprint). It may set Params, Files and Tools.
	Prepare func(ctx context.Context) error
	// Run produces the outputs. It must write each output atomically.
	Run func(ctx context.Context, x *Exec) error

	// Filled in by the runner.
	state *taskState
}

// Exec is what a running task gets from the runner.
type Exec struct {
	Task *Task
	// Log receives the task's progress messages (standard error).
	Log io.Writer
	// Verbose mirrors mage -v.
	Verbose bool
	// Cache is the runner's cache, for digests through the stat cache.
	Cache *cache.Cache
	meta  any
}

// SetMeta attaches a small JSON-able summary (counts, facts) to the task's
// record, returned by Meta on later cache hits.
func (x *Exec) SetMeta(v any) { x.meta = v }

// Family is the first word of the task's ID.
func (t *Task) Family() string {
	if i := strings.IndexByte(t.ID, ' '); i > 0 {
		return t.ID[:i]
	}
	return t.ID
}

// Cached reports, after Run, whether the task was a cache hit.
func (t *Task) Cached() bool { return t.state != nil && t.state.cached }

// Succeeded reports whether the task has finished, run or cached, without an error.
func (t *Task) Succeeded() bool {
	if t.state == nil {
		return false
	}
	select {
	case <-t.state.done:
		return t.state.err == nil
	default:
		return false
	}
}

// Meta decodes the task's recorded summary into v, after the task finished
// (ran or cached).
func (t *Task) Meta(v any) error {
	if t.state == nil || len(t.state.meta) == 0 {
		return nil
	}
	return json.Unmarshal(t.state.meta, v)
}

// Remote is a cache shared between hosts (a registry), which the runner asks after its own: a
// record missing locally is fetched from it, and every record the runner stores or uses from its
// own cache is offered to it. A remote that fails says so itself and lets the run go on: its
// methods return no error the runner would act on beyond "not found".
type Remote interface {
	// Fetch brings the record of key, with every output blob verified, into the runner's cache,
	// or returns an error (not found, unreachable, tampered) and leaves the cache as it was.
	Fetch(ctx context.Context, t *Task, key cache.Digest) error
	// Push offers a record whose blobs the runner's cache holds.
	Push(ctx context.Context, t *Task, rec cache.Record)
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
