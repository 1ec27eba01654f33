package result

import (
	"encoding/json"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/effective"
)

// A result records the run's effective configuration; the schema names exactly its fields.
func TestEffectiveConfigInTheResult(t *testing.T) {
	r, err := Extract(logs+"built/rival-fsdp.log", envOf(map[string]string{"GPUS": "1", "SL": "128"}))
	require.NoError(t, err)
	c := effective.Config{Hidden: 4096, Layers: 32, NoDecay: []string{effective.KindBias, effective.KindNorm},
		Unread: []string{"vocab: no tokenizer.json"}}
	r.EffectiveConfig = &c
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, Validate(b))

	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	ec := doc["effective_config"].(map[string]any)
	assert.Equal(t, 4096.0, ec["hidden"])
	ec["hiden"] = 1
	bad, err := json.Marshal(doc)
	require.NoError(t, err)
	assert.Error(t, Validate(bad), "an unknown effective field")

	var schema struct {
		Properties map[string]struct {
			Required   []string       `json:"required"`
			Properties map[string]any `json:"properties"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(SchemaJSON, &schema))
	s := schema.Properties["effective_config"]
	var names []string
	for n := range s.Properties {
		if n != "unread" {
			names = append(names, n)
		}
	}
	want := effective.Fields()
	sort.Strings(names)
	sort.Strings(want)
	assert.Equal(t, want, names, "result/schema/result.schema.json's effective_config is effective.Config")
	var required []string
	for _, n := range want {
		if !slices.Contains(effective.Later, n) {
			required = append(required, n)
		}
	}
	assert.ElementsMatch(t, required, s.Required, "every field but effective.Later is required")
}
