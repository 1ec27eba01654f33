package result

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaJSON is the JSON Schema (draft 2020-12) every result validates against.
//
//go:embed schema/result.schema.json
var SchemaJSON []byte

var (
	compiled    *jsonschema.Schema
	compileErr  error
	compileOnce sync.Once
)

func schema() (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			compileErr = fmt.Errorf("read result schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("result.schema.json", doc); err != nil {
			compileErr = fmt.Errorf("load result schema: %w", err)
			return
		}
		compiled, compileErr = c.Compile("result.schema.json")
	})
	return compiled, compileErr
}

// Validate checks a result document against the schema; the error lists every
// violation with its JSON pointer.
func Validate(data []byte) error {
	s, err := schema()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("result is not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("result does not match schema %s: %w", SchemaVersion, err)
	}
	return nil
}
