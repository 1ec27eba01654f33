package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in       string
		host     string
		repo     string
		loopback bool
		err      string
	}{
		{in: "oci://registry.example.com/team/rival", host: "registry.example.com", repo: "team/rival"},
		{in: "oci://registry.example.com:5000/rival", host: "registry.example.com:5000", repo: "rival"},
		{in: "oci://127.0.0.1:5000/a/b/c", host: "127.0.0.1:5000", repo: "a/b/c", loopback: true},
		{in: "oci://127.9.9.9:5000/a", host: "127.9.9.9:5000", repo: "a", loopback: true},
		{in: "oci://localhost:5000/a", host: "localhost:5000", repo: "a", loopback: true},
		{in: "oci://[::1]:5000/a", host: "[::1]:5000", repo: "a", loopback: true},
		{in: "oci://[2001:db8::1]/a", host: "[2001:db8::1]", repo: "a"},
		{in: "oci://10.0.0.5/my-team/rival_store", host: "10.0.0.5", repo: "my-team/rival_store"},
		{in: "https://registry.example.com/team", err: "does not start with oci://"},
		{in: "oci://registry.example.com", err: "names no repository"},
		{in: "oci://registry.example.com/", err: "names no repository"},
		{in: "oci:///team", err: "names no host"},
		{in: "oci://host:0/a", err: "port \"0\""},
		{in: "oci://host:99999/a", err: "port"},
		{in: "oci://host:/a", err: "port"},
		{in: "oci://host/Team", err: "repository component \"Team\""},
		{in: "oci://host/team/rival:latest", err: "a tag"},
		{in: "oci://user@host/team", err: "@"},
		{in: "oci://ho_st/team", err: "not a DNS name"},
		{in: "oci://[::1/a", err: "unclosed"},
		{in: "oci://[1.2.3.4]/a", err: "not an IPv6"},
		{in: "oci://host/a//b", err: "repository component \"\""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			l, err := ParseLocation(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), "oci://HOST[:PORT]/REPOSITORY")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.host, l.Host)
			assert.Equal(t, tc.repo, l.Repository)
			assert.Equal(t, tc.loopback, l.Loopback())
			assert.Equal(t, tc.in, l.String())
		})
	}
}

// FuzzParseLocation: any input is an error or a location that prints back as given and whose
// reference a registry client accepts; nothing panics.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"oci://registry.example.com:5000/team/rival", "oci://[::1]:5000/a", "oci://127.0.0.1/a/b", "oci://h/a__b.c-d", "oci://[", "oci://:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocation(s)
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("error quotes too much: %d bytes", len(err.Error()))
			}
			return
		}
		if l.String() != s {
			t.Fatalf("%q prints back as %q", s, l.String())
		}
		if strings.ContainsAny(l.Repository, "@:?# ") || l.Host == "" {
			t.Fatalf("%q: accepted %+v", s, l)
		}
		_ = l.Loopback()
	})
}
