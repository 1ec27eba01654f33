package frameworks

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/frameworks/spec"
	"github.com/rivalbench/rival/hw"
)

// Every row of the framework table is complete, and its log family is one the log parser reads.
func TestFrameworkTable(t *testing.T) {
	names := map[string]bool{}
	for _, f := range Table() {
		assert.False(t, names[f.Name], "%s appears twice", f.Name)
		names[f.Name] = true
		assert.NotEmpty(t, f.Label, f.Name)
		assert.NotEmpty(t, f.Platforms, f.Name)
		require.NotNil(t, f.Build, f.Name)
		fam, err := logparse.Canonical(f.LogFamily)
		require.NoError(t, err, "%s's log family %q", f.Name, f.LogFamily)
		assert.NotEmpty(t, fam, f.Name)
		d, err := EntryScriptDigest(f.Name)
		require.NoError(t, err)
		assert.Equal(t, f.ScriptDigest != nil, d != "", f.Name)
	}
	for _, n := range []string{spec.Mega, spec.Prim, spec.Nemo, spec.Titan, spec.FSDP} {
		assert.True(t, names[n], "%s has a row", n)
	}
	for n := range builders {
		assert.True(t, names[n], "the builder of %s has a row in spec's framework table", n)
	}
	assert.Equal(t, "Megatron-LM", Label(spec.Mega))
	assert.Equal(t, "megatron", LogFamily(spec.Mega))
	assert.Equal(t, []string{hw.PlatformAMD}, Platforms(spec.Prim))
	_, err := EntryScriptDigest("deepspeed")
	assert.ErrorContains(t, err, `unknown framework "deepspeed"`)
}

// Every field of a Request and of its Fair configuration reaches some launch: changing it changes the
// launch (or its refusal) of at least one framework. A field no builder reads is a field callers fill
// in for nothing.
func TestEveryRequestFieldReachesALaunch(t *testing.T) {
	type cell struct{ platform, fw string }
	cells := []cell{{hw.PlatformNVIDIA, "mega"}, {hw.PlatformAMD, "prim"}, {hw.PlatformNVIDIA, "nemo"},
		{hw.PlatformNVIDIA, "titan"}, {hw.PlatformNVIDIA, "fsdp"}, {hw.PlatformAMD, "mega"}}
	outcome := func(r spec.Request) string {
		l, err := Build(r)
		if err != nil {
			return "error: " + err.Error()
		}
		b, err := json.Marshal(l)
		require.NoError(t, err)
		return string(b)
	}
	base := func(c cell) spec.Request {
		r := request(t, c.platform, c.fw, "mistral")
		r.Fair.Profile, r.Fair.ProfileStepEnd = true, 20
		if c.fw == "titan" || c.fw == "fsdp" {
			r.Fair.Profile = false // both refuse PROFILE=1
		}
		return r
	}
	// perturb changes one field by path (Fair.X or X) to another valid-looking value.
	perturb := func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int:
			v.SetInt(v.Int() + 2)
		case reflect.Float64:
			v.SetFloat(v.Float() * 0.5)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.ValueOf(1)))
		}
	}
	check := func(path []int, name string) {
		for _, c := range cells {
			r := base(c)
			before := outcome(r)
			f := reflect.ValueOf(&r).Elem().FieldByIndex(path)
			if f.Kind() == reflect.Struct {
				return
			}
			perturb(f)
			if outcome(r) != before {
				return
			}
		}
		t.Errorf("%s: no mega, prim, nemo, titan or fsdp launch reads it: use it or remove it", name)
	}
	rt := reflect.TypeOf(spec.Request{})
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if f.Name == "Fair" {
			for j := 0; j < f.Type.NumField(); j++ {
				check([]int{i, j}, "Fair."+f.Type.Field(j).Name)
			}
			continue
		}
		if f.Name == "Host" {
			continue // the detected hardware: Validate checks the GPU count against it
		}
		check([]int{i}, "Request."+f.Name)
	}
}
