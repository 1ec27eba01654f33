package core

import (
	"github.com/rivalbench/rival/hw"
)

// Info is a framework's row in the one framework table: its names and what every part of Rival
// reads about it. The registry (package frameworks) adds the builder and the entry-script digest;
// the log parser, compare's labels and reproduce commands, and the tasks read the rest from here.
type Info struct {
	Name      string   // in mage targets and result files
	Label     string   // what reports call it
	Platforms []string // platforms it runs on
	LogFamily string   // the frameworks/logparse family its runs' logs are read as
	// Aliases are other names results, logs and configs use for it (lower case).
	Aliases []string
	// OldSuite is the framework name the old benchmark suite wrote in its results; the old suite's
	// file names abbreviate it as Name.
	OldSuite string
}

var table = []Info{
	{Name: Mega, Label: "Megatron-LM", Platforms: []string{hw.PlatformAMD, hw.PlatformNVIDIA}, LogFamily: "megatron",
		Aliases: []string{"megatron", "megatron-lm", "mlm"}, OldSuite: "megatron"},
	{Name: Prim, Label: "Primus", Platforms: []string{hw.PlatformAMD}, LogFamily: "primus",
		Aliases: []string{"primus"}, OldSuite: "primus"},
	// nemo runs Megatron-Bridge in the NeMo image; its runs print Bridge's log lines.
	{Name: Nemo, Label: "NeMo", Platforms: []string{hw.PlatformNVIDIA}, LogFamily: "megatron-bridge",
		Aliases: []string{"nemo2", "nemo-2", "megatron-bridge", "bridge", "mbridge"}, OldSuite: "nemo"},
	// TorchTitan: Primus's torchtitan backend on AMD, upstream TorchTitan on NVIDIA.
	{Name: Titan, Label: "TorchTitan", Platforms: []string{hw.PlatformAMD, hw.PlatformNVIDIA}, LogFamily: "torchtitan",
		Aliases: []string{"torchtitan"}, OldSuite: "torchtitan"},
	// Rival's own trainer prints Megatron-format iteration lines.
	{Name: FSDP, Label: "FSDP", Platforms: []string{hw.PlatformAMD, hw.PlatformNVIDIA, hw.PlatformCPU}, LogFamily: "megatron",
		OldSuite: "fsdp"},
}

// Frameworks returns the framework table in its fixed order.
func Frameworks() []Info {
	out := make([]Info, len(table))
	for i, f := range table {
		f.Platforms = append([]string(nil), f.Platforms...)
		f.Aliases = append([]string(nil), f.Aliases...)
		out[i] = f
	}
	return out
}

// FrameworkLabels maps every framework name and alias to what reports call the framework.
func FrameworkLabels() map[string]string {
	m := map[string]string{}
	for _, f := range table {
		m[f.Name] = f.Label
		for _, a := range f.Aliases {
			m[a] = f.Label
		}
	}
	return m
}

// FrameworkTargets maps every framework name and alias to the name train targets take.
func FrameworkTargets() map[string]string {
	m := map[string]string{}
	for _, f := range table {
		m[f.Name] = f.Name
		for _, a := range f.Aliases {
			m[a] = f.Name
		}
	}
	return m
}

// OldSuiteNames maps the old suite's file-name abbreviations (Rival's names) to the framework names
// its results carry, plus extra abbreviations of frameworks Rival does not run.
func OldSuiteNames(extra map[string]string) map[string]string {
	m := map[string]string{}
	for _, f := range table {
		m[f.Name] = f.OldSuite
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}
