package core

import (
	"fmt"
	"path"
	"strings"
)

// The software stacks a GPU run can use: each platform has one pinned image per stack. STACK chooses
// (README's settings); current is the default, previous stays runnable so that a team can measure its
// own upgrade and compare with results it already has. A result records the stack by its image
// (Pin.Name), never by these words, which move when the table does.
const (
	StackCurrent  = "current"
	StackPrevious = "previous"
)

// StackNames lists the stacks STACK accepts, the default first.
var StackNames = []string{StackCurrent, StackPrevious}

// CheckStack returns an error naming the accepted values when s is not a stack ("" is current).
func CheckStack(s string) error {
	if s == "" {
		return nil
	}
	for _, n := range StackNames {
		if s == n {
			return nil
		}
	}
	return fmt.Errorf("STACK %q: want %s (current: %s; previous: %s)", s, strings.Join(StackNames, " or "),
		stackImages(StackCurrent), stackImages(StackPrevious))
}

func stackImages(stack string) string {
	var out []string
	for _, p := range Pins {
		if p.Stack == stack {
			out = append(out, p.Image)
		}
	}
	return strings.Join(out, " and ")
}

// Pin is what one pinned platform image ships, as its publishers state it. Launches take their paths
// and version strings from here, docs/frameworks.md prints the table, and results name the pin the
// launch was built against. What actually ran is read inside the container at run time.
type Pin struct {
	Stack    string // current | previous
	Platform string // amd | nvd
	Image    string // the FROM image of the platform's Dockerfile

	Python, Torch, TransformerEngine string // empty: not stated by the publisher
	CUDA, ROCm                       string // one of them

	// Megatron-LM: the commit the image's tree is at, its Megatron Core version, and where the image
	// keeps the tree (pretrain_gpt.py at its top).
	MegatronCommit, MegatronCore, MegatronDir string

	// Primus (amd): release tag, commit, and where the image keeps it.
	Primus, PrimusCommit, PrimusDir string
	// TorchTitan: the release (empty where the image runs a commit), the commit, and how it gets into
	// the image. amd: the commit Primus vendors; nvd: the release nvd.Dockerfile installs (the base
	// image ships none).
	TorchTitan, TorchTitanCommit, TorchTitanWhere string

	// NeMo and Megatron-Bridge (nvd).
	NeMo, Bridge, BridgeCommit, BridgeDir string

	// Sources name the upstream files the values were read from.
	Sources []string
}

// Pins is the one table of pinned images. Every value was read from the upstream trees at the
// commits named here (docs/frameworks.md, "Pinned versions", says how).
var Pins = []Pin{
	{
		Stack: StackCurrent, Platform: "nvd", Image: "nvcr.io/nvidia/nemo:26.06",
		Torch: "2.12.0a0", TransformerEngine: "2.16", CUDA: "13.2",
		MegatronCommit: "d0b3b775498a8ae6870075f1a5fc32bc260aa1b3", MegatronCore: "0.18.0",
		MegatronDir: "/opt/Megatron-Bridge/3rdparty/Megatron-LM",
		Bridge:      "0.5.0", BridgeCommit: "fcbb6031103d0ca845c1a54d4fee55ecfcca17b6",
		BridgeDir:  "/opt/Megatron-Bridge",
		TorchTitan: "v0.2.2", TorchTitanCommit: "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce",
		TorchTitanWhere: "pip install torchtitan==0.2.2 in nvd.Dockerfile",
		Sources: []string{
			"NVIDIA-NeMo/Megatron-Bridge docs/releases/software-versions.md (NeMo Framework 26.06 row: Bridge 0.5.0, Megatron Core 0.18.0, PyTorch 2.12.0a0, Transformer Engine 2.16, CUDA 13.2; the v0.5.0 tag's table ends at 26.04)",
			"NVIDIA-NeMo/Megatron-Bridge@v0.5.0 (fcbb6031) docs/performance-summary.md (26.06 NeMo Container)",
			"NVIDIA-NeMo/Megatron-Bridge@v0.5.0 3rdparty/Megatron-LM (submodule d0b3b775, branch core_r0.18.0)",
			"NVIDIA/Megatron-LM@d0b3b775 megatron/core/package_info.py (0.18.0)",
			"pytorch/torchtitan@v0.2.2 (73a0e697), installed by nvd.Dockerfile",
		},
	},
	{
		Stack: StackCurrent, Platform: "amd", Image: "rocm/primus:v26.5",
		MegatronCommit: "d3528a21301db2d12e92912b3ec025dc8a2ed4d6", MegatronCore: "0.16.0rc0",
		MegatronDir: "/workspace/Primus/third_party/Megatron-LM",
		Primus:      "v26.5.1", PrimusCommit: "9a86ba8c99d6d41199442edef6d02a2bfad71c7c", PrimusDir: "/workspace/Primus",
		TorchTitan: "v0.2.2", TorchTitanCommit: "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce",
		TorchTitanWhere: "Primus v26.5.1 (9a86ba8c) third_party/torchtitan, in rocm/primus:v26.5",
		Sources: []string{
			"AMD-AGI/Primus docker-release/Dockerfile.primus-v26.5.1 (fd1eeabb): rocm/primus:v26.5 is Primus v26.5.1",
			"AMD-AGI/Primus@v26.5.1 (9a86ba8c) third_party/Megatron-LM and third_party/torchtitan submodules",
			"NVIDIA/Megatron-LM@d3528a21 megatron/core/package_info.py (0.16.0rc0)",
		},
	},
	{
		Stack: StackPrevious, Platform: "nvd", Image: "nvcr.io/nvidia/nemo:26.02",
		Torch: "2.10.0a0", TransformerEngine: "2.12", CUDA: "13.0.2",
		MegatronCommit: "b0cc2706ddc60d2aefd5fff346445b5c013036a8", MegatronCore: "0.16.0",
		MegatronDir: "/opt/Megatron-Bridge/3rdparty/Megatron-LM",
		NeMo:        "2.7.0", Bridge: "0.3.0", BridgeCommit: "21b02e0cfb2f8ff907e0d8baee0c5205876c6812",
		BridgeDir:  "/opt/Megatron-Bridge",
		TorchTitan: "v0.2.0", TorchTitanCommit: "29624e37fa6dd319fd671b009338651b5c665da2",
		TorchTitanWhere: "pip install torchtitan==0.2.0 in nvd.Dockerfile",
		Sources: []string{
			"NVIDIA-NeMo/Megatron-Bridge@v0.3.0 docs/releases/software-versions.md (NeMo Framework 26.02)",
			"NVIDIA-NeMo/Megatron-Bridge@v0.3.0 3rdparty/Megatron-LM (submodule b0cc2706)",
			"NVIDIA-NeMo/Megatron-Bridge@v0.3.0 docker/Dockerfile.ci (the tree at /opt/Megatron-Bridge, Megatron-LM under 3rdparty/)",
			"NVIDIA/Megatron-LM@b0cc2706 megatron/core/package_info.py (0.16.0)",
			"pytorch/torchtitan@v0.2.0 (29624e37), installed by nvd.Dockerfile",
		},
	},
	{
		Stack: StackPrevious, Platform: "amd", Image: "rocm/primus:v26.2",
		Python: "3.12.3", Torch: "2.10.0a0+git449b176", TransformerEngine: "2.8.0.dev0+51f74fa7", ROCm: "7.2.0",
		MegatronCommit: "3bec9aa97dda898d16ff5a89bac0ed2b6682b172", MegatronCore: "0.16.0",
		MegatronDir: "/workspace/Primus/third_party/Megatron-LM",
		Primus:      "v26.2", PrimusCommit: "1ec29c67dd22e79d638abed65a42bfb39622491a", PrimusDir: "/workspace/Primus",
		TorchTitanCommit: "5fb7cc2e3bbb9b9dc0ab7af34ed5cc58b5f32021",
		TorchTitanWhere:  "Primus v26.2 (1ec29c67) third_party/torchtitan, in rocm/primus:v26.2",
		Sources: []string{
			"AMD-AGI/Primus@0c279c53 docs/01-getting-started/release-notes.md (rocm/primus:v26.2 row)",
			"AMD-AGI/Primus@v26.2 (1ec29c67) third_party/Megatron-LM and third_party/torchtitan submodules",
			"NVIDIA/Megatron-LM@3bec9aa9 megatron/core/package_info.py (0.16.0)",
		},
	},
}

// PinFor returns the pin of a GPU platform's image on a stack ("" is current).
func PinFor(platform, stack string) (Pin, error) {
	if err := CheckStack(stack); err != nil {
		return Pin{}, err
	}
	if stack == "" {
		stack = StackCurrent
	}
	for _, p := range Pins {
		if p.Platform == platform && p.Stack == stack {
			return p, nil
		}
	}
	return Pin{}, fmt.Errorf("no pinned image for platform %q on the %s stack (pinned: amd, nvd)", platform, stack)
}

// Name is how keys, results and report labels name the stack: the image's last path element
// ("nemo:26.06", "primus:v26.2"), which stays true after the table moves on.
func (p Pin) Name() string { return path.Base(p.Image) }

// MegatronVersion names the pinned Megatron-LM tree of the image, as results record it.
func (p Pin) MegatronVersion() string {
	return fmt.Sprintf("Megatron-LM %s (Megatron Core %s) in %s", short(p.MegatronCommit), p.MegatronCore, p.Image)
}

// PrimusVersion names the pinned Primus tree of the image.
func (p Pin) PrimusVersion() string {
	return fmt.Sprintf("Primus %s (%s) with Megatron-LM %s (Megatron Core %s) in %s",
		p.Primus, short(p.PrimusCommit), short(p.MegatronCommit), p.MegatronCore, p.Image)
}

func short(c string) string {
	if len(c) > 8 {
		return c[:8]
	}
	return c
}

// PinsMarkdown renders Pins as the table docs/frameworks.md shows.
func PinsMarkdown() string {
	var b []byte
	b = append(b, "| stack | image | Megatron-LM | Megatron Core | framework | Transformer Engine | PyTorch | CUDA / ROCm | Python |\n|---|---|---|---|---|---|---|---|---|\n"...)
	for _, p := range Pins {
		fw := fmt.Sprintf("Megatron-Bridge %s (`%s`), TorchTitan %s (`%s`)", p.Bridge, short(p.BridgeCommit), p.TorchTitan, short(p.TorchTitanCommit))
		if p.NeMo != "" {
			fw = fmt.Sprintf("NeMo %s, Megatron-Bridge %s (`%s`), TorchTitan %s (`%s`)", p.NeMo, p.Bridge, short(p.BridgeCommit), p.TorchTitan, short(p.TorchTitanCommit))
		}
		if p.Primus != "" {
			tt := "`" + short(p.TorchTitanCommit) + "`"
			if p.TorchTitan != "" {
				tt = fmt.Sprintf("%s (`%s`)", p.TorchTitan, short(p.TorchTitanCommit))
			}
			fw = fmt.Sprintf("Primus %s (`%s`), TorchTitan %s", p.Primus, short(p.PrimusCommit), tt)
		}
		stack := "CUDA " + p.CUDA
		if p.ROCm != "" {
			stack = "ROCm " + p.ROCm
		}
		py := orNotStated(p.Python)
		if stack == "CUDA " || stack == "ROCm " {
			stack = "not stated"
		}
		b = append(b, fmt.Sprintf("| %s | `%s` | `%s` at `%s` | %s | %s | %s | %s | %s | %s |\n",
			p.Stack, p.Image, short(p.MegatronCommit), p.MegatronDir, p.MegatronCore, fw, orNotStated(p.TransformerEngine), orNotStated(p.Torch), stack, py)...)
	}
	return string(b)
}

func orNotStated(s string) string {
	if s == "" {
		return "not stated"
	}
	return s
}
