package compare

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/result"
)

// jsonKeys is t's JSON field names (embedded structs' fields at their level).
func jsonKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")[0]
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && tag == "" {
			out = append(out, jsonKeys(f.Type)...)
			continue
		}
		out = append(out, tag)
	}
	return out
}

// Every field of a result, and every field of its configuration and metrics objects, is either
// re-derived from the log by VerifyLog or named in notFromTheLog with why: a new field cannot slip
// past verify:result unseen.
func TestEveryResultFieldIsCheckedOrNamed(t *testing.T) {
	measured := map[string]bool{}
	for _, f := range measuredFields {
		measured[f] = true
	}
	nested := map[string]bool{"training_config": true, "parallelism_config": true, "performance_metrics": true, "memory_metrics": true}
	rt := reflect.TypeOf(result.Result{})
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		key := strings.Split(f.Tag.Get("json"), ",")[0]
		if key == "" || key == "-" {
			continue
		}
		if nested[key] {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for _, sub := range jsonKeys(ft) {
				path := key + "." + sub
				_, named := notFromTheLog[path]
				assert.True(t, measured[path] || named, "%s is neither re-derived by VerifyLog nor named in notFromTheLog", path)
			}
			continue
		}
		_, named := notFromTheLog[key]
		assert.True(t, measured[key] || named, "%s is neither re-derived by VerifyLog nor named in notFromTheLog", key)
	}
}

// A held-out loss edited after the run is caught, as a step time is.
func TestVerifyLogCatchesAnEditedEvaluation(t *testing.T) {
	const path = "../frameworks/logparse/testdata/real/mlperf-nvidia-gb300-x8-llama31-8b.log"
	env := map[string]string{"GPUS": "8", "MODEL": "llama", "GPU": "GB300", "PRECISION": "fp4"}
	r, err := result.Extract(path, func(k string) string { return env[k] })
	require.NoError(t, err)
	log, err := os.ReadFile(path)
	require.NoError(t, err)
	checks, _, err := VerifyLog(r, log)
	require.NoError(t, err)
	require.Len(t, checks, 1)
	assert.Equal(t, StatusMatch, checks[0].Status)

	r.Evaluations[1].Loss = 3.2 // below the target, where the run printed 3.2839
	checks, _, err = VerifyLog(r, log)
	require.NoError(t, err)
	require.Len(t, checks, 1)
	assert.Equal(t, StatusMismatch, checks[0].Status)
	assert.Equal(t, "evaluations", checks[0].Field)
}

// A result written before evaluations were recorded is not called edited for lacking them.
func TestVerifyLogOlderResultWithoutEvaluations(t *testing.T) {
	const path = "../frameworks/logparse/testdata/real/mlperf-amd-mi355x-llama31-8b.log"
	env := map[string]string{"GPUS": "8", "MODEL": "llama"}
	r, err := result.Extract(path, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NotEmpty(t, r.Evaluations)
	r.Evaluations, r.MLPerf = nil, nil
	log, err := os.ReadFile(path)
	require.NoError(t, err)
	checks, _, err := VerifyLog(r, log)
	require.NoError(t, err)
	require.Len(t, checks, 1)
	assert.Equal(t, StatusMatch, checks[0].Status, "%+v", checks)
}
