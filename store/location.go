package store

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Location is where a store lives: a registry host (with its port, when given) and a repository
// in it, as RIVAL_STORE=oci://HOST[:PORT]/REPOSITORY names them.
type Location struct {
	Host       string // host or host:port, as the registry is addressed
	Repository string // path inside the registry, e.g. team/rival-store
}

// String is the oci:// form the location was read from.
func (l Location) String() string { return "oci://" + l.Host + "/" + l.Repository }

// Reference is HOST/REPOSITORY, the form registry clients take.
func (l Location) Reference() string { return l.Host + "/" + l.Repository }

// repoComponent is one path component of a repository name, as the OCI distribution
// specification allows it: lowercase letters and digits separated by '.', '_', '__' or '-'s.
var repoComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)

// hostLabel is one DNS label of a registry host name.
var hostLabel = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$`)

// ParseLocation reads RIVAL_STORE's value: oci://HOST[:PORT]/REPOSITORY. HOST is a DNS name, an
// IPv4 address or a bracketed IPv6 address; REPOSITORY is one or more lowercase path components.
// Errors quote the value and say what form is wanted.
func ParseLocation(s string) (Location, error) {
	bad := func(why string) (Location, error) {
		return Location{}, fmt.Errorf("store %q: %s (want oci://HOST[:PORT]/REPOSITORY, e.g. oci://registry.example.com:5000/team/rival)", clip(s), why)
	}
	rest, ok := strings.CutPrefix(s, "oci://")
	if !ok {
		return bad("does not start with oci://")
	}
	host, repo, ok := strings.Cut(rest, "/")
	if !ok || repo == "" {
		return bad("names no repository after the host")
	}
	if host == "" {
		return bad("names no host")
	}
	if strings.ContainsAny(host, "@?#") || strings.ContainsAny(repo, "@?#:") {
		return bad("holds a character a registry reference cannot (@, ?, # or a tag)")
	}
	name, port := host, ""
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return bad("has an unclosed [ in its host")
		}
		ip, err := netip.ParseAddr(host[1:end])
		if err != nil || !ip.Is6() {
			return bad("brackets something that is not an IPv6 address")
		}
		name = host[:end+1]
		switch tail := host[end+1:]; {
		case tail == "":
		case strings.HasPrefix(tail, ":"):
			port = tail[1:]
		default:
			return bad("has text after the bracketed address")
		}
	} else if h, p, ok := strings.Cut(host, ":"); ok {
		name, port = h, p
	}
	if port != "" || strings.HasSuffix(host, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return bad(fmt.Sprintf("port %q is not a number from 1 to 65535", clip(port)))
		}
	}
	if !strings.HasPrefix(name, "[") {
		if len(name) > 253 {
			return bad("host name is longer than 253 characters")
		}
		for _, label := range strings.Split(name, ".") {
			if !hostLabel.MatchString(label) {
				return bad(fmt.Sprintf("host %q is not a DNS name or IP address", clip(name)))
			}
		}
	}
	if len(repo) > 255 {
		return bad("repository is longer than 255 characters")
	}
	for _, c := range strings.Split(repo, "/") {
		if !repoComponent.MatchString(c) {
			return bad(fmt.Sprintf("repository component %q is not lowercase letters and digits joined by '.', '_' or '-'", clip(c)))
		}
	}
	return Location{Host: host, Repository: repo}, nil
}

// Loopback reports whether the host is a loopback address (127.0.0.0/8, ::1) or localhost: such a
// registry may speak plain HTTP, as Docker allows.
func (l Location) Loopback() bool {
	h := l.Host
	if strings.HasPrefix(h, "[") {
		h = h[1:strings.IndexByte(h, ']')]
	} else if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// clip bounds what an error quotes of a bad value.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
