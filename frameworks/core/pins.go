package core

import "fmt"

// Pin is what one pinned platform image ships, as its publishers state it. Launches take their paths
// and version strings from here, docs/frameworks.md prints the table, and results name the pin the
// launch was built against. What actually ran is read inside the container at run time.
type Pin struct {
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
		Platform: "nvd", Image: "nvcr.io/nvidia/nemo:26.02",
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
		Platform: "amd", Image: "rocm/primus:v26.2",
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

// PinFor returns the pin of a GPU platform's image.
func PinFor(platform string) (Pin, error) {
	for _, p := range Pins {
		if p.Platform == platform {
			return p, nil
		}
	}
	return Pin{}, fmt.Errorf("spec: no pinned image for platform %q (pinned: amd, nvd)", platform)
}

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
	b = append(b, "| image | Megatron-LM | Megatron Core | framework | Transformer Engine | PyTorch | CUDA / ROCm | Python |\n|---|---|---|---|---|---|---|---|\n"...)
	for _, p := range Pins {
		fw := fmt.Sprintf("NeMo %s, Megatron-Bridge %s (`%s`), TorchTitan %s (`%s`)", p.NeMo, p.Bridge, short(p.BridgeCommit), p.TorchTitan, short(p.TorchTitanCommit))
		if p.Primus != "" {
			fw = fmt.Sprintf("Primus %s (`%s`), TorchTitan `%s`", p.Primus, short(p.PrimusCommit), short(p.TorchTitanCommit))
		}
		stack := "CUDA " + p.CUDA
		if p.ROCm != "" {
			stack = "ROCm " + p.ROCm
		}
		py := p.Python
		if py == "" {
			py = "not stated"
		}
		b = append(b, fmt.Sprintf("| `%s` | `%s` at `%s` | %s | %s | %s | %s | %s | %s |\n",
			p.Image, short(p.MegatronCommit), p.MegatronDir, p.MegatronCore, fw, p.TransformerEngine, p.Torch, stack, py)...)
	}
	return string(b)
}
