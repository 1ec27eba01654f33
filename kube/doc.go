// Package kube runs a benchmark on a Kubernetes cluster with the objects every cluster has: an
// Indexed Job with one pod per node (the completion index is the node rank) and a headless Service
// through which the pods find rank 0. It builds the manifests from a kubespec.Run (Objects,
// Manifest), and submits and follows them through client-go (Cluster), streaming rank 0's log
// through a LogSource.
//
// Only the rival-kube program (cmd/rival-kube) imports it outside tests: the targets describe a
// run with kubespec and hand it to that program through kubeproc, so that client-go and the API
// types are not compiled into them.
package kube
