package kubespec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

// nameSamples are values on both sides of every rule: lengths at and past the limits, dots,
// slashes, prefixes, case, edges.
func nameSamples() []string {
	s := []string{"", "a", "A", "-", "a-", "-a", "a.b", "a..b", ".a", "a_b", "A_b.C-d", "my-name", "123-abc", "MyName",
		"nvidia.com/gpu", "example.com/MyName", "/a", "a/", "a/b/c", "Example.com/x", "ex_ample.com/x", "a b", "é",
		"a/-b", "a.b.c/d-e_f.g", "1.2.3", "rival-nvd-mega-llama"}
	for _, n := range []int{62, 63, 64, 252, 253, 254} {
		s = append(s, strings.Repeat("a", n), strings.Repeat("a", n)+"/x", "x/"+strings.Repeat("a", n))
	}
	s = append(s, strings.Repeat("a.", 127)+"a", strings.Repeat("ab.", 85)+"/k")
	return s
}

// The name checks agree with the API library's, message for message.
func TestNameChecksAgreeWithTheAPILibrary(t *testing.T) {
	for _, v := range nameSamples() {
		assert.Equal(t, validation.IsDNS1123Label(v), isDNS1123Label(v), "DNS label %q", v)
		assert.Equal(t, validation.IsDNS1123Subdomain(v), isDNS1123Subdomain(v), "DNS subdomain %q", v)
		assert.Equal(t, validation.IsQualifiedName(v), isLabelKey(v), "label key %q", v)
		assert.Equal(t, validation.IsValidLabelValue(v), isLabelValue(v), "label value %q", v)
	}
}

func FuzzNameChecks(f *testing.F) {
	for _, s := range nameSamples() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		assert.Equal(t, validation.IsDNS1123Label(v), isDNS1123Label(v), "DNS label %q", v)
		assert.Equal(t, validation.IsDNS1123Subdomain(v), isDNS1123Subdomain(v), "DNS subdomain %q", v)
		assert.Equal(t, validation.IsQualifiedName(v), isLabelKey(v), "label key %q", v)
		assert.Equal(t, validation.IsValidLabelValue(v), isLabelValue(v), "label value %q", v)
	})
}
