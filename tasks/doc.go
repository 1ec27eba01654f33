// Package tasks holds Rival's DAG: each task declares its inputs (files by
// content, upstream outputs, parameters, allow-listed environment
// variables, tool versions) and outputs; the runner turns those into an
// action key, materializes outputs from the cache on a hit, and runs the task
// on a miss, recording what it produced.
package tasks
