package tasks

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/rivalbench/rival/result"
)

// Extract parses a training log Rival did not launch into a result JSON,
// written to out; facts the log lacks come from the environment
// (result.ExtractEnv lists them).
func Extract(logfile string, out io.Writer) error {
	r, err := result.Extract(logfile, os.Getenv)
	if err != nil {
		return err
	}
	if r.RivalVersion == nil {
		v := Version
		r.RivalVersion = &v
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := result.Validate(data); err != nil {
		return fmt.Errorf("extract %s: the result does not match the schema: %w", logfile, err)
	}
	_, err = out.Write(append(data, '\n'))
	return err
}
