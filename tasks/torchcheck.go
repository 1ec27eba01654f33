package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/rivalbench/rival/internal/lines"
)

// errNoTorch explains how to get PyTorch for CPU training runs.
var errNoTorch = errors.New("training on the CPU needs python3 with PyTorch, which this host lacks: " +
	"install it with `sudo apt-get install python3-torch python3-numpy libopenblas0-pthread` (Debian, Ubuntu) " +
	"or `pip install torch numpy`, then run the command again")

// checkTorch fails with ErrNoTorch unless python3 can import torch and numpy.
func checkTorch(ctx context.Context, python string) error {
	_, err := probeTorch(ctx, python)
	return err
}

// torchProbe is what python3 says about its PyTorch.
type torchProbe struct {
	Version string
	BLAS    []string // shared BLAS libraries mapped once torch is imported
}

// referenceBLAS names the generic reference BLAS among the mapped
// libraries (Debian's libblas3, in .../blas/libblas.so.3), or "".
func (p torchProbe) referenceBLAS() string {
	for _, l := range p.BLAS {
		if strings.Contains(l, "/blas/libblas.so") && !strings.Contains(l, "openblas") {
			return l
		}
	}
	return ""
}

// torchProbeScript imports torch and numpy, prints torch's version, then
// every BLAS library the process maps (the kernel resolves the alternatives
// symlinks, so the real library shows).
const torchProbeScript = `import torch, numpy
print("torch", torch.__version__)
seen = set()
for line in open("/proc/self/maps"):
    f = line.split()[-1]
    if "blas" in f.rsplit("/", 1)[-1] and f not in seen:
        seen.add(f)
        print("blas", f)
`

// probeTorch runs python with the probe script; an error means torch or
// numpy cannot be imported.
func probeTorch(ctx context.Context, python string) (torchProbe, error) {
	var p torchProbe
	out, err := exec.CommandContext(ctx, python, "-c", torchProbeScript).CombinedOutput()
	if err != nil {
		return p, fmt.Errorf("%w (%s: %s)", errNoTorch, python, lines.Last(string(out)))
	}
	for _, l := range strings.Split(string(out), "\n") {
		switch k, v, _ := strings.Cut(strings.TrimSpace(l), " "); k {
		case "torch":
			p.Version = v
		case "blas":
			p.BLAS = append(p.BLAS, v)
		}
	}
	return p, nil
}

// blasAdvice is the warning for a torch on the reference BLAS, or "".
func blasAdvice(p torchProbe) string {
	lib := p.referenceBLAS()
	if lib == "" {
		return ""
	}
	return fmt.Sprintf("warning: PyTorch %s uses the generic reference BLAS (%s), which trains about 14 times slower than OpenBLAS: "+
		"install it with `%sapt-get install libopenblas0-pthread` (Debian, Ubuntu)\n", p.Version, lib, sudoPrefix())
}

func sudoPrefix() string {
	if os.Geteuid() == 0 {
		return ""
	}
	return "sudo "
}
