package stackdiff

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeType(t *testing.T) {
	for in, want := range map[string]string{
		"Optional[str]":                          "str | None",
		"str | None":                             "str | None",
		"Optional[Literal['a', 'b']]":            "Literal['a', 'b'] | None",
		"Union[str, pathlib.Path, None]":         "str | pathlib.Path | None",
		"Optional[Union[int, List[int]]]":        "int | List[int] | None",
		"Dict[str, Optional[int]]":               "Dict[str, int | None]",
		"Optional[":                              "Optional[",
		"Callable[[torch.Tensor], torch.Tensor]": "Callable[[torch.Tensor], torch.Tensor]",
	} {
		assert.Equal(t, want, normalizeType(in), in)
	}
}

func TestLineDelta(t *testing.T) {
	a, r := lineDelta([]string{"x", "y", "y", "z"}, []string{"x", "y", "w", "w"})
	assert.Equal(t, 2, a)
	assert.Equal(t, 2, r)
	a, r = lineDelta([]string{"x"}, []string{"x"})
	assert.Zero(t, a+r)
}

func TestRenameCandidates(t *testing.T) {
	r := item{area: "module", name: "use_turbo_grouped_mlp"}
	added := []item{{area: "module", name: "use_turbo_grouped_gemm"}, {area: "module", name: "debug"}, {area: "other", name: "use_x_y"}}
	got := renameCandidates(r, added)
	require.Len(t, got, 1, "one-word names and other areas are no candidates")
	assert.Equal(t, "use_turbo_grouped_gemm", got[0].name)
	m, ok := movedTo(item{area: "[training]", name: "seed"}, []item{{area: "[debug]", name: "seed"}})
	assert.True(t, ok)
	assert.Equal(t, "[debug]", m.area)
	_, ok = movedTo(item{area: "[a]", name: "x"}, []item{{area: "[b]", name: "x"}, {area: "[c]", name: "x"}})
	assert.False(t, ok, "two candidates: not a move")
}

func TestItemsRejectsBadFacts(t *testing.T) {
	for _, fw := range Frameworks {
		_, _, err := items(fw, []byte(`{}`))
		assert.Error(t, err, fw)
		_, _, err = items(fw, []byte(`not json`))
		assert.Error(t, err, fw)
	}
	_, _, err := items("deepspeed", []byte(`{}`))
	assert.ErrorContains(t, err, "no framework")
}

func FuzzItems(f *testing.F) {
	for _, n := range []string{"primus_v26.2", "torchtitan_v0.2.0"} {
		b, err := os.ReadFile(filepath.Join("..", "facts", n+".json"))
		if err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"options":[{"flags":["--a"],"default":1}]}`))
	f.Add([]byte(`{"sections":{"s":{"f":{"default":1,"kind":"int"}}}}`))
	f.Add([]byte(`{"sections":{"m":{"class":"X","fields":{"a":{"text":"int"}}}},"classes":{"C":{"absent":"x.C"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fw := range Frameworks {
			its, _, err := items(fw, b)
			if err != nil {
				continue
			}
			r := diffItems(fw, "a", "b", its, nil, nil, nil, nil)
			var buf bytes.Buffer
			buf.WriteString(r.Markdown())
		}
	})
}
