package kubespec

import "fmt"

// Final is what a run came to.
type Final struct {
	Nodes    []string `json:"nodes"`              // the nodes the pods ran on, in rank order
	Pods     []string `json:"pods"`               // the pods, in rank order
	ExitCode int      `json:"exitCode,omitempty"` // the failing container's exit code; 0 when the run succeeded or never started
	Reason   string   `json:"reason,omitempty"`   // why it failed ("OOMKilled", "ImagePullBackOff", "Unschedulable", ...); "" on success
}

// RunError is a run that ended without completing.
type RunError struct {
	Job   string `json:"job"`
	Final Final  `json:"final"`
	Msg   string `json:"msg"`
}

func (e *RunError) Error() string { return fmt.Sprintf("kube: job %s: %s", e.Job, e.Msg) }
