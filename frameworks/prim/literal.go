package prim

// An override and the Python literals its values are written in, shared by the launch that lists
// the overrides (prim.go) and the patcher that writes them into the experiment file (patch.go).

import (
	"strconv"
	"strings"
)

// Override is one pre_trainer key with its value as a Python literal: True/False/None, a number
// (floats always with a dot), a list of numbers, or a string.
type Override struct {
	Key   string
	Value string
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyFloat writes a float the way both PyYAML's SafeLoader and Primus's command-line typing read back
// as a float: positional notation with a dot (3e-05 would stay the string "3e-05" in both).
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func pyStrOrNone(v string) string {
	if v == "" {
		return "None"
	}
	return v
}
