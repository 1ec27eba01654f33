package compare_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/compare"
)

// A figure in docs/demo.md: a rate, a step time or a ratio.
var demoFigure = regexp.MustCompile(`\d[\d.,]*(×| ?ms/step| tokens/s| GFLOP/s| s per step)`)

// docs/demo.md quotes speeds measured on a CPU with native bf16; a CPU
// without it trains in fp32 and measures others. Every paragraph that
// quotes a figure says which precision it ran in, and the quoted comparison
// is the one compare makes of the bf16 results it names.
func TestDemoDocFiguresNameTheirPrecision(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "demo.md"))
	require.NoError(t, err)
	doc := string(raw)
	for _, para := range strings.Split(doc, "\n\n") {
		if demoFigure.MatchString(para) && !strings.HasPrefix(strings.TrimSpace(para), "|") {
			assert.Regexp(t, `bf16|fp32`, para, "a figure without its precision:\n%s", para)
		}
	}

	files, err := filepath.Glob(filepath.Join("testdata", "html", "train_*.json"))
	require.NoError(t, err)
	inputs, problems := compare.LoadFiles(context.Background(), files, nil)
	require.Empty(t, problems)
	for _, in := range inputs {
		require.Equal(t, "bf16", in.Result.TrainingConfig.Precision, in.Source)
	}
	rep, err := compare.Analyze(inputs, compare.DefaultPrices())
	require.NoError(t, err)
	var con bytes.Buffer
	rep.ConsoleConfigs(&con)
	ratio := regexp.MustCompile(`: (\d\.\d+× ± \d\.\d+) tokens/s/GPU`).FindStringSubmatch(con.String())
	require.NotNil(t, ratio, con.String())
	i := strings.Index(doc, ratio[1]+"\n   tokens/s/GPU")
	require.GreaterOrEqual(t, i, 0, "docs/demo.md quotes compare's ratio of testdata/html, %s", ratio[1])
	para := doc[i:]
	para = para[:strings.Index(para, "\n\nOn a CPU run")]
	assert.Contains(t, para, "runs in **bf16**")
	assert.Contains(t, para, "compare/testdata/html")
}
