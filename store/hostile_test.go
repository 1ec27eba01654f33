package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
	"github.com/rivalbench/rival/store"
)

// The store's CA file (RIVAL_STORE_CA) is read before any request: one
// that is not a regular file of configuration size is refused, naming it.
func TestCAFileRefusesHostileFiles(t *testing.T) {
	loc, err := store.ParseLocation("oci://127.0.0.1:1/rival/cache")
	require.NoError(t, err)
	safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitConfig, func(t *testing.T) (string, func() error) {
		p := filepath.Join(t.TempDir(), "ca.pem")
		return p, func() error { _, err := store.Open(context.Background(), loc, store.Options{CAFile: p}); return err }
	})
}

// A registry whose errors echo the request's Authorization header puts no credential into the
// error Rival shows: the Basic pair, its base64 and its password are redacted, and a long error
// answer is cut.
func TestRegistryErrorsCarryNoCredentials(t *testing.T) {
	const user, password = "team", "s3cret-pa55word"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authz := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case authz == "":
			w.Header().Set("WWW-Authenticate", `Basic realm="rival"`)
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"log in"}]}`))
		case r.URL.Path == "/v2/":
			w.Write([]byte("{}"))
		default:
			raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(authz, "Basic "))
			w.WriteHeader(http.StatusBadRequest)
			detail := fmt.Sprintf("you sent %q, that is %q, password %s %s", authz, raw, password, strings.Repeat("x", 10000))
			json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": "UNSUPPORTED", "message": "bad request", "detail": detail}}})
		}
	}))
	t.Cleanup(srv.Close)
	loc, err := store.ParseLocation("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/team/rival")
	require.NoError(t, err)
	st, err := store.Open(context.Background(), loc, store.Options{Attempts: 1, Credential: func(context.Context, string) (store.Credential, error) {
		return store.Credential{Username: user, Password: password}, nil
	}})
	require.NoError(t, err)
	_, _, err = st.Results(context.Background())
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "[redacted]", "the registry's own words are kept, less the secrets")
	for _, secret := range []string{password, base64.StdEncoding.EncodeToString([]byte(user + ":" + password))} {
		assert.NotContains(t, msg, secret)
	}
	assert.Less(t, len(msg), 6000, "the error answer is cut")
}

// An identity token (a registry login that gives a refresh token, sent in the token request's
// form, not a header) echoed by the token server is redacted too, as are a password's characters
// a Go server escapes in JSON.
func TestTokenServerErrorsCarryNoIdentityToken(t *testing.T) {
	const token = "rt-<secret>&refresh-token-0123456789"
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/token":
			r.ParseForm()
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": "DENIED", "message": "bad form " + r.Form.Encode(), "detail": r.Form.Get("refresh_token")}}})
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+srv.URL+`/token",service="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"token needed"}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	loc, err := store.ParseLocation("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/team/rival")
	require.NoError(t, err)
	_, err = store.Open(context.Background(), loc, store.Options{Attempts: 1, Credential: func(context.Context, string) (store.Credential, error) {
		return store.Credential{IdentityToken: token}, nil
	}})
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "secret>&refresh")
	assert.NotContains(t, msg, `secret\u003e\u0026refresh`)
	assert.NotContains(t, msg, url.QueryEscape(token))
}
