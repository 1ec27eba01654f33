// Package results turns logs into results: extract. It knows nothing of the workspace's
// configuration: package tasks passes in the log, the Rival version and where to write; the
// target is a thin call into this package.
//
// Where things are:
//
//   - extract.go: Extract, a training log Rival did not launch turned into a result JSON, with
//     what was read and how the headline numbers came out when asked (extract -v).
package results
