// Package kube runs a benchmark on a Kubernetes cluster with the objects every cluster has: an
// Indexed Job with one pod per node (the completion index is the node rank) and a headless Service
// through which the pods find rank 0. It builds the manifests (Objects, Manifest), and submits and
// follows them through client-go (Cluster), streaming rank 0's log through a LogSource.
package kube
