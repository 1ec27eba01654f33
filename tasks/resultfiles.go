package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

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
