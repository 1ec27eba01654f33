package cache

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rivalbench/rival/safefile"
)

// Output is one file a task produced, stored as a blob.
type Output struct {
	Path       string `json:"path"`     // workspace-relative when inside the workspace, else absolute
	AbsPath    string `json:"abs_path"` // where it was materialized, symlinks resolved, for verify
	Digest     Digest `json:"digest"`
	Size       int64  `json:"size"`
	Mode       uint32 `json:"mode"`
	Compressed bool   `json:"compressed"`
}

// Record is an action record: what a task with a given key produced.
type Record struct {
	Schema     string          `json:"schema"`
	Key        Digest          `json:"key"`
	Task       string          `json:"task"`
	Created    time.Time       `json:"created"`
	DurationMS int64           `json:"duration_ms"`
	Inputs     []KeyPart       `json:"inputs"`
	Outputs    []Output        `json:"outputs"`
	Meta       json.RawMessage `json:"meta,omitempty"`
}

func (c *Cache) recordPath(key Digest) string {
	return shard(filepath.Join(c.Dir, "actions"), key) + ".json"
}

func (c *Cache) lastPath(task string) string {
	return shard(filepath.Join(c.Dir, "tasks"), HashBytes([]byte(task))) + ".json"
}

// PutRecord stores r and remembers its inputs as the latest for its task,
// so the next run can say what changed.
func (c *Cache) PutRecord(r Record) error {
	r.Schema = KeySchema
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("record %s: %w", r.Task, err)
	}
	if err := WriteFileAtomic(c.recordPath(r.Key), data, 0o644); err != nil {
		return fmt.Errorf("record %s: %w", r.Task, err)
	}
	return c.setLast(r.Task, r.Key, r.Inputs)
}

type lastRun struct {
	Task   string    `json:"task"`
	Key    Digest    `json:"key"`
	Inputs []KeyPart `json:"inputs"`
}

// setLast remembers the inputs of the latest run of task.
func (c *Cache) setLast(task string, key Digest, inputs []KeyPart) error {
	data, err := json.Marshal(lastRun{Task: task, Key: key, Inputs: inputs})
	if err != nil {
		return err
	}
	return WriteFileAtomic(c.lastPath(task), data, 0o644)
}

// LastInputs returns the inputs of the latest recorded run of task.
func (c *Cache) LastInputs(task string) ([]KeyPart, bool) {
	data, err := ReadFileLimit(c.readCtx(), c.lastPath(task), LimitRecord)
	if err != nil {
		return nil, false
	}
	var l lastRun
	if json.Unmarshal(data, &l) != nil || l.Task != task {
		return nil, false
	}
	return l.Inputs, true
}

// GetRecord returns the record for key. A record whose output blobs are gone
// (trimmed, or dropped as corrupt) is as good as absent.
func (c *Cache) GetRecord(key Digest) (*Record, error) {
	r, err := c.LookupRecord(key)
	if err != nil {
		return nil, err
	}
	for _, o := range r.Outputs {
		if !c.HasBlob(o.Digest) {
			return nil, ErrNotFound
		}
	}
	return r, nil
}

// LookupRecord returns the record for key even when some of its blobs are
// gone, so a caller holding an intact copy of an output can store it again.
func (c *Cache) LookupRecord(key Digest) (*Record, error) {
	data, err := ReadFileLimit(c.readCtx(), c.recordPath(key), LimitRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrNotRegular) {
		// Rival never writes such a record: treat it as damage, like one
		// that does not parse.
		c.warn("cache: record %s is unusable (%v); dropped", key.Short(), err)
		os.Remove(c.recordPath(key))
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read record %s: %w", key.Short(), err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil || r.Key != key {
		c.warn("cache: record %s is unreadable; dropped", key.Short())
		os.Remove(c.recordPath(key))
		return nil, ErrNotFound
	}
	return &r, nil
}

// touchEvery bounds how often a hit rewrites a record's access time: like
// Go's build cache, an hour's precision is enough for LRU trimming and saves
// a metadata write on every hit.
const touchEvery = time.Hour

// Hit notes that key was used: an entry in the hit log, and the record's
// access time bumped when it is more than an hour old.
func (c *Cache) Hit(key Digest) {
	p := c.recordPath(key)
	if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > touchEvery {
		now := time.Now()
		os.Chtimes(p, now, now)
	}
	f, err := os.OpenFile(filepath.Join(c.Dir, "actions", "hits.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	// One short O_APPEND write is atomic against other processes.
	f.WriteString(key.String() + "\n")
	f.Close()
}

// hits counts the hit log per key.
func (c *Cache) hits() map[Digest]int {
	out := map[Digest]int{}
	// The hit log grows with every hit: streamed, never read whole.
	f, _, err := OpenRegular(filepath.Join(c.Dir, "actions", "hits.log"))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(safefile.Reader(c.readCtx(), f))
	for sc.Scan() {
		if d, err := ParseDigest(sc.Text()); err == nil {
			out[d]++
		}
	}
	return out
}
