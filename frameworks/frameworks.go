// Package frameworks is Rival's framework registry: which training frameworks exist, on which
// platforms each runs (and the old suite's cross-platform remap), validation of a launch request
// against the model and the hardware, and the dispatch to each framework's launch builder.
package frameworks

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/nemo"
	"github.com/rivalbench/rival/frameworks/prim"
	"github.com/rivalbench/rival/frameworks/titan"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Framework is one row of the framework table: the names, label, platforms and log family every
// part of Rival reads (core.Info, the table in frameworks/core/table.go) and the builder.
// Adding a framework is a row there, its package (a builder from a Plan to a Launch) with its entry in
// builders, and its log family in frameworks/logparse when its logs are a new format
// (docs/frameworks.md).
type Framework struct {
	core.Info
	// Build returns the exact launch of one run from a validated plan.
	Build func(core.Plan) (core.Launch, error)
	// ScriptDigest returns the BLAKE3 of its embedded entry script(s); nil when the launch runs the
	// framework's own entry point.
	ScriptDigest func() string
}

// builders are each framework's builder and entry-script digest, by name.
var builders = map[string]Framework{
	core.Mega:  {Build: mega.Build},
	core.Prim:  {Build: prim.Build},
	core.Nemo:  {Build: nemo.Build, ScriptDigest: nemo.ScriptDigest},
	core.Titan: {Build: titan.Build, ScriptDigest: titan.ScriptDigest},
	core.FSDP:  {Build: fsdp.Build, ScriptDigest: fsdp.ScriptDigest},
}

// table is the one framework table: spec's rows with their builders (TestFrameworkTable checks that
// every row has one and every builder a row).
var table = func() []Framework {
	var out []Framework
	for _, info := range core.Frameworks() {
		f := builders[info.Name]
		f.Info = info
		out = append(out, f)
	}
	return out
}()

// Lookup returns a framework's row.
func Lookup(name string) (Framework, bool) {
	for _, f := range table {
		if f.Name == name {
			return f, true
		}
	}
	return Framework{}, false
}

// Table returns the framework table in its fixed order.
func Table() []Framework { return append([]Framework(nil), table...) }

// LogFamily returns the log parser name for a framework's logs ("" for an unknown framework).
func LogFamily(framework string) string {
	f, _ := Lookup(framework)
	return f.LogFamily
}

// Label returns what reports call a framework (the name itself when unknown).
func Label(framework string) string {
	if f, ok := Lookup(framework); ok {
		return f.Label
	}
	return framework
}

// EntryScriptDigest returns the digest of the framework's embedded entry script(s): "" when it runs
// its own entry point, an error for an unknown framework.
func EntryScriptDigest(framework string) (string, error) {
	f, ok := Lookup(framework)
	if !ok {
		return "", fmt.Errorf("frameworks: unknown framework %q: known frameworks are %s", framework, strings.Join(Names(), ", "))
	}
	if f.ScriptDigest == nil {
		return "", nil
	}
	return f.ScriptDigest(), nil
}

// remap is the old suite's cross-platform rule: the platform's own Megatron-based stack stands in for
// the other platform's. framework → platform → framework run instead.
var remap = map[string]map[string]string{
	core.Prim: {hw.PlatformNVIDIA: core.Nemo},
	core.Nemo: {hw.PlatformAMD: core.Prim},
}

// Names lists the frameworks Build accepts, sorted.
func Names() []string {
	out := make([]string, 0, len(table))
	for _, f := range table {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// Platforms returns the platforms a framework runs on (nil for an unknown framework).
func Platforms(framework string) []string {
	f, _ := Lookup(framework)
	return append([]string(nil), f.Platforms...)
}

// Resolve returns the framework that runs when framework is asked for on platform, and why it differs
// (empty when it does not).
func Resolve(framework, platform string) (run, reason string, err error) {
	f, ok := Lookup(framework)
	if !ok {
		return "", "", fmt.Errorf("frameworks: unknown framework %q: known frameworks are %s", framework, strings.Join(Names(), ", "))
	}
	if !validPlatform(platform) {
		return "", "", fmt.Errorf("frameworks: Platform %q: want amd, nvd or cpu", platform)
	}
	for _, p := range f.Platforms {
		if p == platform {
			return framework, "", nil
		}
	}
	if to, ok := remap[framework][platform]; ok {
		return to, fmt.Sprintf("%s does not run on %s; the old suite's remap runs %s there instead", framework, platform, to), nil
	}
	return "", "", fmt.Errorf("frameworks: %s does not run on platform %s (it runs on %s)", framework, platform, strings.Join(f.Platforms, ", "))
}

func validPlatform(p string) bool {
	return p == hw.PlatformAMD || p == hw.PlatformNVIDIA || p == hw.PlatformCPU
}

// Build validates the request and returns the exact launch of the framework that runs.
func Build(req core.Request) (core.Launch, error) {
	run, reason, err := Resolve(req.Framework, req.Platform)
	if err != nil {
		return core.Launch{}, err
	}
	p, err := Validate(req, run)
	if err != nil {
		return core.Launch{}, err
	}
	f, _ := Lookup(run)
	l, err := f.Build(p)
	if err != nil {
		return core.Launch{}, err
	}
	l.Requested, l.Remapped = req.Framework, reason
	if p.Platform != hw.PlatformCPU {
		pin, err := p.Pin()
		if err != nil {
			return core.Launch{}, fmt.Errorf("frameworks: %w", err)
		}
		l.Stack = pin.Name()
	}
	if err := core.ApplyPlatformEnv(p.Platform, p.Stack, &l); err != nil {
		return core.Launch{}, err
	}
	if err := preflight(p, &l); err != nil {
		return core.Launch{}, err
	}
	want, err := effective.Want(p)
	if err != nil {
		return core.Launch{}, err
	}
	if l.Workload, err = json.Marshal(want); err != nil {
		return core.Launch{}, err
	}
	if l.Preflight != nil {
		l.Preflight.Workload = l.Workload // what its read-back is compared with
	}
	return l, nil
}

// Validate checks a request for the framework that will run it and derives its plan. Every error
// names the field (and its config.env key) and what to change.
func Validate(req core.Request, framework string) (core.Plan, error) {
	p := core.Plan{Request: req}
	if err := core.CheckStack(req.Stack); err != nil {
		return p, fmt.Errorf("frameworks: %w", err)
	}
	if req.Stack != "" && req.Platform == hw.PlatformCPU {
		return p, fmt.Errorf("frameworks: STACK %s: the cpu platform has one stack, the host's or the cpu image's PyTorch; unset STACK for cpu runs", req.Stack)
	}
	if req.Host.Platform != "" && req.Host.Platform != req.Platform {
		return p, fmt.Errorf("frameworks: Platform %q but the detected host is %q", req.Platform, req.Host.Platform)
	}
	m, err := models.Lookup(req.Model)
	if err != nil {
		return p, fmt.Errorf("frameworks: Model: %w", err)
	}
	p.Model = m

	p.GPUsPerNode = req.GPUs
	if p.GPUsPerNode == 0 {
		p.GPUsPerNode = len(req.Host.GPUs)
		if req.Platform == hw.PlatformCPU {
			p.GPUsPerNode = 1
		}
	}
	if p.GPUsPerNode <= 0 {
		return p, fmt.Errorf("frameworks: GPUs is %d and the host reports %d GPUs: a %s run needs at least one", req.GPUs, len(req.Host.GPUs), req.Platform)
	}
	if req.Platform != hw.PlatformCPU && len(req.Host.GPUs) > 0 && p.GPUsPerNode > len(req.Host.GPUs) {
		return p, fmt.Errorf("frameworks: GPUs %d exceeds the %d GPUs the host has", p.GPUsPerNode, len(req.Host.GPUs))
	}
	p.NNodes = req.NNodes
	if p.NNodes == 0 {
		p.NNodes = 1
	}
	if p.NNodes < 0 {
		return p, fmt.Errorf("frameworks: NNodes %d must be >= 1", req.NNodes)
	}
	p.World = p.GPUsPerNode * p.NNodes

	f := &p.Fair
	if err := core.CheckFair(*f); err != nil {
		return p, fmt.Errorf("frameworks: %w", err)
	}
	if f.DP == 0 {
		if p.World%(f.TP*f.PP) != 0 {
			return p, fmt.Errorf("frameworks: TP×PP = %d does not divide GPUs × NNodes = %d", f.TP*f.PP, p.World)
		}
		f.DP = p.World / (f.TP * f.PP)
	}
	if f.TP*f.PP*f.DP != p.World {
		return p, fmt.Errorf("frameworks: TP×PP×DP = %d×%d×%d = %d does not equal GPUs × NNodes = %d×%d = %d: change TP, PP or DP",
			f.TP, f.PP, f.DP, f.TP*f.PP*f.DP, p.GPUsPerNode, p.NNodes, p.World)
	}
	gbs := f.MBS * f.DP * f.GA
	if f.GBS != 0 && f.GBS != gbs {
		return p, fmt.Errorf("frameworks: %w", core.CheckFair(*f))
	}
	f.GBS = gbs
	if m.Heads%f.TP != 0 {
		return p, fmt.Errorf("frameworks: TP %d does not divide the %d attention heads of %s", f.TP, m.Heads, m.Name)
	}
	if m.KVHeads%f.TP != 0 {
		return p, fmt.Errorf("frameworks: TP %d does not divide the %d KV heads of %s", f.TP, m.KVHeads, m.Name)
	}
	if m.Layers%f.PP != 0 {
		return p, fmt.Errorf("frameworks: PP %d does not divide the %d layers of %s", f.PP, m.Layers, m.Name)
	}
	if f.SL > m.MaxPositions {
		return p, fmt.Errorf("frameworks: SL %d exceeds the %d positions of %s", f.SL, m.MaxPositions, m.Name)
	}
	if f.Precision == core.FP8 && req.Platform == hw.PlatformCPU {
		return p, fmt.Errorf("frameworks: PRECISION fp8 needs a GPU with FP8 units; use bf16 or fp32 on cpu")
	}
	if len(f.ProfileRanks) == 0 {
		f.ProfileRanks = []int{0}
	}
	if f.Profile {
		for _, r := range f.ProfileRanks {
			if r < 0 || r >= p.World {
				return p, fmt.Errorf("frameworks: PROFILE_RANKS has rank %d, outside the %d processes", r, p.World)
			}
		}
	}
	paths := []struct{ name, v string }{{"DataPrefix", req.DataPrefix}, {"OutputDir", req.OutputDir}}
	if framework != core.FSDP {
		paths = append(paths, struct{ name, v string }{"TokenizerPath", req.TokenizerPath},
			struct{ name, v string }{"DataCacheDir", req.DataCacheDir})
	}
	for _, c := range paths {
		if c.v == "" || !path.IsAbs(c.v) {
			return p, fmt.Errorf("frameworks: %s %q must be an absolute path inside the container", c.name, c.v)
		}
	}
	return p, nil
}

// FSDPVersion names the trainer the fsdp launches run: Rival's own, embedded in the binary.
var FSDPVersion = fsdp.Version()
