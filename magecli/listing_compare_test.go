package magecli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/magefile/mage/parse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `go run mage.go -l` prints each target's synopsis as mage's parser reads
// it from magefile.go, renamed by Listing. The compare targets write
// report.html, the page a reader opens first: their lines name it.
func TestListingOfCompareNamesItsReports(t *testing.T) {
	info, err := parse.Package("..", []string{"magefile.go"}, false)
	require.NoError(t, err)
	var listing strings.Builder
	listing.WriteString("Targets:\n")
	for _, f := range info.Funcs {
		// Named as mage lists it: namespace lower-cased, function lower-first.
		name := lowerFirst(f.Name)
		if f.Receiver != "" {
			name = strings.ToLower(f.Receiver) + ":" + name
		}
		fmt.Fprintf(&listing, "  %s    %s\n", name, f.Synopsis)
	}
	out := Listing(listing.String(), repoTargets(t))
	found := 0
	for _, line := range strings.Split(out, "\n") {
		name := strings.Fields(line + " ?")[0]
		if name != "compare:all" && name != "compare:dir" {
			continue
		}
		found++
		for _, file := range []string{"report.html", "report.md", "compare.png", "compare.svg"} {
			assert.Contains(t, line, file, name)
		}
	}
	assert.Equal(t, 2, found, "compare:all and compare:dir are listed:\n%s", out)
}
