package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// htmlOracle is testdata/html/expected.json, written by oracle.py.
type htmlOracle struct {
	Groups []struct {
		ConfigFingerprint string `json:"config_fingerprint"`
		DP, N             int
		Mean, SD          float64
		Sources           []string
	}
	Ratio float64
}

func demoReport(t *testing.T) (*Report, htmlOracle) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "html", "train_*.json"))
	require.NoError(t, err)
	require.Len(t, paths, 6)
	inputs, problems := LoadFiles(context.Background(), paths, nil)
	require.Empty(t, problems)
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	var want htmlOracle
	data, err := os.ReadFile(filepath.Join("testdata", "html", "expected.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &want))
	return rep, want
}

func TestWriteHTMLFromDemoResults(t *testing.T) {
	rep, want := demoReport(t)
	var a, b bytes.Buffer
	require.NoError(t, rep.WriteHTML(&a))
	require.NoError(t, rep.WriteHTML(&b))
	assert.Equal(t, a.String(), b.String(), "deterministic")
	page := a.String()

	// Self-contained: no script, nothing fetched, a policy that forbids fetching.
	assert.NotContains(t, page, "<script")
	assert.Regexp(t, `Content-Security-Policy" content="default-src 'none'`, page)
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#][^"]*)"`).FindAllStringSubmatch(page, -1) {
		t.Errorf("the page loads %s", m[1])
	}

	// The configuration comparison, with the oracle's numbers.
	require.Len(t, rep.Models, 1)
	cc := rep.Models[0].ConfigComparisons()
	require.Len(t, cc, 1)
	assert.InDelta(t, want.Ratio, cc[0].Ratio.Value, 1e-9*want.Ratio)
	assert.InDelta(t, want.Groups[0].Mean, cc[0].Faster.TPS.Mean, 1e-9*want.Groups[0].Mean)
	assert.InDelta(t, want.Groups[1].SD, cc[0].Slower.TPS.SD, 1e-9*want.Groups[1].SD)
	assert.Contains(t, page, num(want.Groups[0].Mean, 1)+" ± ", "the faster group's mean with its interval")
	assert.Contains(t, page, "CPU FSDP (ran one process), DP 1, 1 process", "labelled by what ran: torch 1.13 runs the trainer's DDP path, not FSDP")
	assert.Contains(t, page, "CPU FSDP (ran DDP), DP 2, 2 processes")
	assert.Contains(t, page, "data_parallel: 1 vs 2")
	require.NotNil(t, cc[0].Parity, "same data and seed: losses are compared")
	assert.True(t, cc[0].Parity.Available)

	// Tables, figures, and one <details> per run with its provenance.
	for _, class := range []string{"groups", "fairness", "parity"} {
		assert.Contains(t, page, `<table class="`+class+`">`)
	}
	assert.Equal(t, 3, strings.Count(page, `<svg class="fig"`))
	assert.Equal(t, 6, strings.Count(page, `<details class="run">`))
	for _, g := range want.Groups {
		for _, s := range g.Sources {
			assert.Contains(t, page, s)
		}
	}
	assert.Contains(t, page, "<th>launch command</th>")
	assert.NotContains(t, page, "PRICE_", "a CPU report asks for no price")
}

func TestPlotsAreWorldReadableLikeTheReport(t *testing.T) {
	rep, _ := demoReport(t)
	dir := t.TempDir()
	png, svg := filepath.Join(dir, "compare.png"), filepath.Join(dir, "compare.svg")
	require.NoError(t, rep.writePlots(png, svg))
	for _, p := range []string{png, svg} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), p)
	}
}

// chromiumFlags run a headless Chromium that reaches nothing outside.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"}

// checkScript records errors, policy violations and console errors from the
// start, and on load writes what it measured into the page, where
// --dump-dom shows it.
const checkScript = `<script>
(function () {
  var errs = [];
  window.addEventListener("error", function (e) { errs.push("error: " + (e.message || (e.target && e.target.outerHTML))); }, true);
  document.addEventListener("securitypolicyviolation", function (e) { errs.push("blocked: " + e.blockedURI + " " + e.violatedDirective); });
  var orig = console.error;
  console.error = function () { errs.push("console.error: " + Array.prototype.join.call(arguments, " ")); orig.apply(console, arguments); };
  window.addEventListener("load", function () {
    var figs = [].map.call(document.querySelectorAll("svg.fig"), function (s) { var r = s.getBoundingClientRect(); return [r.width, r.height]; });
    var out = {errors: errs, figures: figs, tables: document.querySelectorAll("table").length,
      fairnessRows: document.querySelectorAll("table.fairness tr").length, runs: document.querySelectorAll("details.run").length};
    var pre = document.createElement("pre"); pre.id = "rival-check"; pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
})();
</script>`

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("RIVAL_TEST_CHROMIUM") == "1" {
		t.Fatal("RIVAL_TEST_CHROMIUM=1 but no chromium on PATH (Debian: apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (Debian: apt-get install chromium; RIVAL_TEST_CHROMIUM=1 makes this test mandatory)")
	return ""
}

func runChromium(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	profile := t.TempDir()
	all := append(append(append([]string(nil), chromiumFlags...), "--user-data-dir="+profile), args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium %v: %s", args, errb.String())
	return out.String(), errb.String()
}

// TestHTMLReportInChromium loads report.html in a real headless Chromium:
// no console error, nothing blocked by the page's no-network policy, every
// figure drawn with a non-zero size, the tables and the runs' provenance
// present; and saves a screenshot to the repository's output/ folder.
func TestHTMLReportInChromium(t *testing.T) {
	bin := chromium(t)
	rep, want := demoReport(t)
	var buf bytes.Buffer
	require.NoError(t, rep.WriteHTML(&buf))
	page := buf.String()
	dir := t.TempDir()
	plain := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(plain, []byte(page), 0o644))

	// A copy that allows only the inline check script; every other load
	// stays forbidden and would be reported as a violation.
	checked := strings.Replace(page, "default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';", 1)
	checked = strings.Replace(checked, "<head>\n", "<head>\n"+checkScript+"\n", 1)
	require.NotEqual(t, page, checked)
	checkedPath := filepath.Join(dir, "checked.html")
	require.NoError(t, os.WriteFile(checkedPath, []byte(checked), 0o644))

	dom, stderr := runChromium(t, bin, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom", "file://"+checkedPath)
	m := regexp.MustCompile(`<pre id="rival-check">([^<]*)</pre>`).FindStringSubmatch(dom)
	require.NotNil(t, m, "the check script did not run; chromium said:\n%s", stderr)
	var got struct {
		Errors       []string
		Figures      [][2]float64
		Tables       int
		FairnessRows int
		Runs         int
	}
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &got))
	assert.Empty(t, got.Errors)
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console message: %s", l)
		}
	}
	require.Len(t, got.Figures, 3)
	for i, f := range got.Figures {
		assert.Greater(t, f[0], 100.0, "figure %d width", i)
		assert.Greater(t, f[1], 50.0, "figure %d height", i)
	}
	assert.GreaterOrEqual(t, got.Tables, 3)
	assert.Equal(t, 5, got.FairnessRows, "a header and the four fields that differ (DP, GPU count, config fingerprint, the trainer's path)")
	assert.Equal(t, len(want.Groups[0].Sources)+len(want.Groups[1].Sources), got.Runs)

	shot := filepath.Join(dir, "report-html.png")
	runChromium(t, bin, "--window-size=1200,2600", "--screenshot="+shot, "file://"+plain)
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "a PNG screenshot")
	// The CI artefact: output/ at the repository root.
	out := filepath.Join("..", "output")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "report-html-chromium.png"), png, 0o644))
}

// TestWriteHTMLCrossPlatform renders the golden set (AMD and NVIDIA
// groups, results with errors, unreadable files) without a configuration
// comparison, headlines from the cross-platform analysis.
func TestWriteHTMLCrossPlatform(t *testing.T) {
	inputs, problems, err := Load(context.Background(), []string{filepath.Join("testdata", "results")}, nil)
	require.NoError(t, err)
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	rep.Skipped = problems
	var b bytes.Buffer
	require.NoError(t, rep.WriteHTML(&b))
	page := b.String()
	assert.Contains(t, page, "MI300X Primus vs H100 NeMo, Llama 3.1 8B")
	assert.Contains(t, page, `<h2 id="errors">Errors</h2>`)
	assert.Contains(t, page, "mfu_above_100_percent")
	assert.Contains(t, page, "broken.json")
	assert.Equal(t, 3*len(rep.Models), strings.Count(page, `<svg class="fig"`))
	assert.Equal(t, len(rep.Inputs), strings.Count(page, `<details class="run">`))
	assert.NotContains(t, page, "version prim", "cross-platform groups keep their plain labels")
}

// TestMarkdownAgreesWithHTMLOnConfigurations: report.md states the demo's
// configuration comparison and its loss parity as report.html does, instead
// of saying that nothing is compared.
func TestMarkdownAgreesWithHTMLOnConfigurations(t *testing.T) {
	rep, want := demoReport(t)
	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	doc := md.String()
	cc := rep.Models[0].ConfigComparisons()
	require.Len(t, cc, 1)
	head := doc[strings.Index(doc, "## Headlines"):]
	head = head[:strings.Index(head[3:], "\n## ")+3]
	assert.Contains(t, head, mdEscape(cc[0].Line(rep.Models[0])))
	assert.Contains(t, head, num(want.Ratio, 2)+"×")
	assert.Contains(t, head, "its configurations are compared with each other")
	assert.NotContains(t, doc, "loss curves are not compared")
	parity := doc[strings.Index(doc, "### Loss parity"):]
	assert.Regexp(t, `CPU FSDP \(ran [^)]+\), DP \d, \d process(es)? vs CPU FSDP \(ran [^)]+\), DP \d, \d process(es)? \(between configurations, same data and seed\): in parity`, parity)
}

// TestFairnessShowsWhereValuesDiffer: the demo's two groups record the same
// trainer version followed by the path each ran ("; ran single …" against
// "; ran ddp …"); both fairness tables show that part rather than the common
// prefix.
func TestFairnessShowsWhereValuesDiffer(t *testing.T) {
	rep, _ := demoReport(t)
	var md, page bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	require.NoError(t, rep.WriteHTML(&page))
	for _, doc := range []string{md.String(), page.String()} {
		assert.Contains(t, doc, "…; ran single on torch 1.13")
		assert.Contains(t, doc, "…; ran ddp on torch 1.13")
	}
	cc := rep.Models[0].ConfigComparisons()
	require.Len(t, cc, 1)
	assert.Contains(t, cc[0].Differs, "framework_version: ran single on torch 1.13.0a0 vs ran ddp on torch 1.13.0a0; reduce none (one process) vs reduce fp32", "the headline's list of differences too, cut at no word")
	assert.Contains(t, cc[0].Differs, "config_fingerprint differs")
}
