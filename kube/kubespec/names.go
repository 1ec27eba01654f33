package kubespec

import (
	"fmt"
	"regexp"
	"strings"
)

// The name checks below give the same verdicts and messages as k8s.io/apimachinery v0.37's
// (pkg/util/validation for DNS labels and subdomains, pkg/api/validate/content for label keys and
// values; Apache License 2.0, The Kubernetes Authors), so that a refused setting reads as before
// without linking the API library. names_test.go compares them with the library's.

const (
	dns1123LabelFmt          = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123LabelErrMsg       = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	dns1123LabelMaxLength    = 63
	dns1123SubdomainFmt      = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainErrorMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	dns1123SubdomainMaxLen   = 253

	labelKeyCharFmt    = "[A-Za-z0-9]"
	labelKeyExtCharFmt = "[-A-Za-z0-9_.]"
	labelKeyFmt        = "(" + labelKeyCharFmt + labelKeyExtCharFmt + "*)?" + labelKeyCharFmt
	labelKeyErrMsg     = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelKeyMaxLength  = 63
	labelValueFmt      = "(" + labelKeyFmt + ")?"
	labelValueErrMsg   = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueMaxLen   = 63
)

var (
	dns1123LabelRegexp     = regexp.MustCompile("^" + dns1123LabelFmt + "$")
	dns1123SubdomainRegexp = regexp.MustCompile("^" + dns1123SubdomainFmt + "$")
	labelKeyRegexp         = regexp.MustCompile("^" + labelKeyFmt + "$")
	labelValueRegexp       = regexp.MustCompile("^" + labelValueFmt + "$")
)

// regexError explains a value that does not match re, with examples of values that do.
func regexError(msg, re string, examples ...string) string {
	if len(examples) == 0 {
		return msg + " (regex used for validation is '" + re + "')"
	}
	msg += " (e.g. "
	for i, e := range examples {
		if i > 0 {
			msg += " or "
		}
		msg += "'" + e + "', "
	}
	return msg + "regex used for validation is '" + re + "')"
}

// isDNS1123Label is validation.IsDNS1123Label: what a namespace or a Job name must be.
func isDNS1123Label(value string) []string {
	var errs []string
	if len(value) > dns1123LabelMaxLength {
		errs = append(errs, fmt.Sprintf("must be no more than %d characters", dns1123LabelMaxLength))
	}
	if !dns1123LabelRegexp.MatchString(value) {
		if dns1123SubdomainRegexp.MatchString(value) {
			// A valid subdomain but not a label: the length is checked, so it has dots.
			errs = append(errs, "must not contain dots")
		} else {
			errs = append(errs, regexError(dns1123LabelErrMsg, dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return errs
}

// isDNS1123Subdomain is a DNS subdomain check; unit names the length's unit, since the two
// libraries word it differently ("characters" in validation, "bytes" in content).
func isDNS1123Subdomain(value string) []string { return dns1123Subdomain(value, "characters") }

func dns1123Subdomain(value, unit string) []string {
	var errs []string
	if len(value) > dns1123SubdomainMaxLen {
		errs = append(errs, fmt.Sprintf("must be no more than %d %s", dns1123SubdomainMaxLen, unit))
	}
	if !dns1123SubdomainRegexp.MatchString(value) {
		errs = append(errs, regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// isLabelKey is content.IsLabelKey (validation.IsQualifiedName): an optional DNS subdomain
// prefix and '/', then a name.
func isLabelKey(value string) []string {
	var errs []string
	parts := strings.Split(value, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		var prefix string
		prefix, name = parts[0], parts[1]
		if len(prefix) == 0 {
			errs = append(errs, "prefix part must be non-empty")
		} else if msgs := dns1123Subdomain(prefix, "bytes"); len(msgs) != 0 {
			for _, m := range msgs {
				errs = append(errs, "prefix part "+m)
			}
		}
	default:
		return append(errs, "a valid label key "+regexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc")+
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if len(name) == 0 {
		errs = append(errs, "name part must be non-empty")
	} else if len(name) > labelKeyMaxLength {
		errs = append(errs, fmt.Sprintf("name part must be no more than %d bytes", labelKeyMaxLength))
	}
	if !labelKeyRegexp.MatchString(name) {
		errs = append(errs, "name part "+regexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// isLabelValue is content.IsLabelValue (validation.IsValidLabelValue).
func isLabelValue(value string) []string {
	var errs []string
	if len(value) > labelValueMaxLen {
		errs = append(errs, fmt.Sprintf("must be no more than %d bytes", labelValueMaxLen))
	}
	if !labelValueRegexp.MatchString(value) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}
