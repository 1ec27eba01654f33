// Package tasks holds Rival's targets: fetch, filter, encode, image, train, extract, compare and
// the cache's upkeep, each built as dag.Task values over one Workspace (the configuration, the
// cache and a dag.Runner). magefile.go declares the targets and delegates each to one call here.
package tasks
