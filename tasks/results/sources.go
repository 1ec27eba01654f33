package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/internal/goprog"
)

// Sources is where compare and compare:history find results and write their
// reports, as the workspace configures them.
type Sources struct {
	// Root is the workspace root: a task's ID names Dirs relative to it.
	Root string
	// OutDir is OUTPUT_DIR: results are found under it, reports written to it.
	OutDir string
	// Dirs are folders of results copied from other hosts (compare:dir).
	Dirs []string
	// Cache holds the results train recorded, and training logs.
	Cache *cache.Cache
	// HistoryThreshold is HISTORY_THRESHOLD as configured, read when the
	// task is prepared.
	HistoryThreshold string
	// TargetLoss is TARGET_LOSS as configured: the held-out loss compare measures time to.
	TargetLoss string
	// Plot builds rival-plot, which draws the figures, on first use.
	Plot *goprog.Helper
}

// historyThreshold parses HISTORY_THRESHOLD.
func (s Sources) historyThreshold() (float64, error) {
	th, err := compare.ParseHistoryThreshold(s.HistoryThreshold)
	if err != nil {
		return 0, fmt.Errorf("config %w", err)
	}
	return th, nil
}

// relDirs is Dirs relative to Root, as task IDs name them.
func (s Sources) relDirs() []string {
	out := make([]string, len(s.Dirs))
	for i, p := range s.Dirs {
		out[i] = dag.RelPath(s.Root, p)
	}
	return out
}

// resultFiles lists result JSON files under top (OUTPUT_DIR, leaving out
// runs/, where runs keep scratch files such as generated configs) and under
// dirs (results copied from other hosts), recursively and sorted.
//
// A folder that cannot be a result folder (a filesystem root, the home
// folder) is refused up front, and a walk that meets more than
// maxResultWalk entries stops with an error naming the folder, so a
// mistyped OUTPUT_DIR=/ never walks the whole filesystem.
func resultFiles(top string, dirs []string) ([]string, error) {
	var out []string
	visited := 0
	walk := func(root string, skip string) error {
		if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if why := notAResultFolder(root); why != "" {
			return fmt.Errorf("compare: %s is %s, not a folder of results: set OUTPUT_DIR (or name the folders) to where the runs' results are", root, why)
		}
		return filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if visited++; visited > maxResultWalk {
				return fmt.Errorf("compare: %s holds more than %d files and folders; it does not look like a folder of results: set OUTPUT_DIR (or name the folders) to where the runs' results are", root, maxResultWalk)
			}
			if de.IsDir() && skip != "" && p == skip {
				return filepath.SkipDir
			}
			if !de.IsDir() && strings.HasSuffix(p, ".json") {
				if de.Type()&os.ModeSymlink != 0 {
					if _, err := os.Stat(p); err != nil {
						return nil // a dangling link is no result; it must not block the others
					}
				}
				out = append(out, p)
			}
			return nil
		})
	}
	if err := walk(top, filepath.Join(top, "runs")); err != nil {
		return nil, err
	}
	for _, d := range dirs {
		// A folder named on the command line must exist: a typo is not "no results".
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("compare:dir: %s does not exist: give the folder that holds the result JSON files (copied from other hosts or unpacked from wrap), e.g. go run mage.go compare:dir results/", d)
		}
		if err := walk(d, ""); err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// maxResultWalk bounds the entries compare visits looking for results.
var maxResultWalk = 200_000

// notAResultFolder says why dir can never be a folder of results (a
// filesystem root, the home folder), or "".
func notAResultFolder(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if filepath.Dir(abs) == abs {
		return "the filesystem root"
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil && h == abs {
			return "the home folder"
		}
	}
	return ""
}

// cachedResults returns every result recorded by a train task in the cache.
func cachedResults(c *cache.Cache) ([][]byte, error) {
	recs, err := c.Records()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, r := range recs {
		if !strings.HasPrefix(r.Task, "train ") || len(r.Outputs) == 0 {
			continue
		}
		if data, err := c.ReadBlob(r.Outputs[0].Digest); err == nil {
			out = append(out, data)
		}
	}
	return out, nil
}

// noResultsBecause says why no file could be compared: every rejected
// result with its reason (the first 20), files that are not results
// counted.
func noResultsBecause(problems []compare.Problem) error {
	var b strings.Builder
	invalid, ignored := 0, 0
	for _, p := range problems {
		if p.Kind == "ignored" {
			ignored++
			continue
		}
		invalid++
		if invalid <= 20 {
			fmt.Fprintf(&b, "\n  %s: %s", p.Source, p.Reason)
		}
	}
	if invalid > 20 {
		fmt.Fprintf(&b, "\n  ... and %d more", invalid-20)
	}
	if ignored > 0 {
		fmt.Fprintf(&b, "\n  (%d JSON files that are not results were ignored)", ignored)
	}
	if invalid == 0 {
		return fmt.Errorf("%w%s", compare.ErrNoResults, b.String())
	}
	return fmt.Errorf("no results to compare: %d result files were rejected:%s", invalid, b.String())
}
