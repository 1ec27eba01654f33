// Package results turns logs into results and checks them: extract, compare, compare:history and
// verify:result. It knows nothing of the workspace's configuration or training plan: package
// tasks passes in the folders and the cache (Sources), the shared store's results and the
// configuration's defaults for compare, the Rival version for extract, and for verify:result of one
// result what it recomputed of the run the result is checked against (a compare.Recomputed); the
// targets are thin calls into this package.
//
// Where things are:
//
//   - extract.go: Extract, a training log Rival did not launch turned into a result JSON, with
//     what was read and how the headline numbers came out when asked (extract -v).
//   - sources.go: Sources, where compare and compare:history read results; the result files
//     under OUTPUT_DIR and the named folders (refusing a filesystem root, the home folder or a
//     walk without end), the results train recorded in the cache, why none could be compared.
//   - compare.go: CompareTask, the report, plots and HTML page over every result, keyed by the
//     results' digests, HISTORY_THRESHOLD and the PRICE_ variables; ReportCompare prints it.
//   - history.go: HistoryTask, each workload across software stacks, hosts and dates;
//     ReportHistory prints it.
//   - verify.go: VerifyResult, one result against the workspace's recomputed inputs and its own
//     training log; VerifyInputs, two results' inputs against each other; the log checks compare
//     reports for every input.
package results
