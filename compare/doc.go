// Package compare turns benchmark results into what people read: grouped statistics with
// confidence intervals, Rival's own TFLOP/s and MFU, memory, energy and cost, a fairness check of
// what differs between compared runs, loss parity, a multi-panel figure (PNG and SVG), a Markdown
// and an HTML report and a console summary.
//
// # Entry points
//
//   - [Load] reads result files (Rival's schema and the old suite's) into inputs; a file that cannot
//     be compared becomes a [Problem] that says what is missing. [Parse] reads one result.
//   - [Analyze] pools the inputs that repeat one setup (a [GroupKey]: platform, GPU, framework,
//     model, dataset, configuration, software stack) and computes every figure and comparison into a [Report],
//     priced by a [PriceTable] ([DefaultPrices], [ParsePriceEnv]).
//   - [Report.WriteMarkdown], [Report.WriteHTML] and [Report.Console] write it; [Report.Figure]
//     and [Report.HistoryFigure] describe its figures as data, which the rival-plot program draws
//     (package compare/figure); [Anchors] are the published figures the report sets results
//     against.
//
// It also checks inputs: [VerifyResult] compares the fingerprints a result records with the
// values a workspace recomputed for its run ([Recomputed]), and [CompareInputs] lists the inputs
// on which two results differ.
//
// # Files
//
// Each file uses only the files listed before it (tools/filecycles checks that no two files use
// each other):
//
//   - Figures: stats.go (means, intervals, ratios, outliers, percentiles, Student's t),
//     thresholds.go (the limits of the sanity, parity and window checks), format.go (numbers,
//     intervals and missing values as text).
//   - Fields: fields.go (the configuration fields compared, the one field→label map, and what a
//     result says of its platform, GPU, model and framework), reproduce.go (the command that
//     reruns a result).
//   - Inputs: load.go (reading and upgrading results), prices.go, verify.go ([VerifyResult],
//     [CompareInputs]), report.go (the [Report] and its parts: what analysis fills in and every
//     output reads), logcheck.go (a result against its training log).
//   - Analysis: runs.go (one run's figures), groups.go (pooling runs into groups, their
//     statistics and names), fairness.go, parity.go (loss curves), comparisons.go (speedups and
//     configuration comparisons), history.go (one workload over stacks and dates), anchors.go
//     (published figures), analyze.go ([Analyze]).
//   - Rendering: headlines.go (the sentences every output shares), console.go, markdown.go,
//     html.go, plot.go and history_plot.go (the figures as compare/figure data).
//
// # Dependencies
//
// It reads results through package result and looks up models and hardware in packages models
// and hw (the FLOP formula and peak throughput behind MFU), and framework names in
// frameworks/core; it writes files through the cache's atomic write. Only package tasks imports it.
package compare
