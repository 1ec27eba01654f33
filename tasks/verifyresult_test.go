package tasks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyResultsComparesInputs(t *testing.T) {
	w, _ := newWorkspace(t, "")
	a := trainOnce(t, w)
	var out bytes.Buffer
	require.NoError(t, w.VerifyResults([]string{a, a}, &out))
	assert.Contains(t, out.String(), "identical inputs apart from the hardware")

	// B trained on other data: a different dataset fingerprint.
	var r map[string]any
	data, err := os.ReadFile(a)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &r))
	r["dataset"].(map[string]any)["fingerprint"] = strings.Repeat("0", 64)
	b := filepath.Join(t.TempDir(), "b.json")
	data, err = json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b, data, 0o644))
	out.Reset()
	err = w.VerifyResults([]string{a, b}, &out)
	require.Error(t, err)
	assert.Contains(t, out.String(), "DIFFERS")
}
