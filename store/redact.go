package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxErrorBody bounds what of a registry's error answer is read; maxErrorText what of each of its
// messages reaches an error.
const (
	maxErrorBody = 64 << 10
	maxErrorText = 512
)

// redacting is the store's HTTP transport: it remembers every credential a request carried (a
// Basic pair, its password, a Bearer token) and every one the store handed the registry client
// (a password, an identity token, which goes in a form body, not a header), and takes them out of
// every error answer before the registry client reads it, each message cut to maxErrorText. A registry that echoes the request's
// Authorization header in its error then puts no secret into Rival's output.
type redacting struct {
	next http.RoundTripper

	mu      sync.Mutex
	secrets []string
}

func (r *redacting) RoundTrip(req *http.Request) (*http.Response, error) {
	r.remember(req.Header.Get("Authorization"))
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	clean := r.clean(string(body))
	resp.Body = io.NopCloser(strings.NewReader(clean))
	resp.ContentLength = int64(len(clean))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// remember keeps the secrets of an Authorization header's value.
func (r *redacting) remember(authz string) {
	scheme, cred, ok := strings.Cut(authz, " ")
	if !ok || cred == "" {
		return
	}
	found := []string{cred}
	if strings.EqualFold(scheme, "Basic") {
		if raw, err := base64.StdEncoding.DecodeString(cred); err == nil {
			found = append(found, string(raw))
			if _, pass, ok := strings.Cut(string(raw), ":"); ok {
				found = append(found, pass)
			}
		}
	}
	r.add(found...)
}

// add remembers secrets, each also as JSON text spells it (a quote or backslash escaped, and <, >
// and & as \u003c, \u003e, \u0026 as Go's encoder writes them) and as a form body does.
func (r *redacting) add(secrets ...string) {
	var found []string
	for _, s := range secrets {
		if len(s) < 4 {
			continue // too short to tell from the text around it
		}
		found = append(found, s)
		if q := jsonText(s); len(q) >= 2 {
			found = append(found, q[1:len(q)-1])
		}
		if q, err := json.Marshal(s); err == nil {
			found = append(found, string(q[1:len(q)-1]))
		}
		found = append(found, url.QueryEscape(s)) // as a form body or a query spells it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range found {
		if !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
}

// redact takes every remembered secret, and any Authorization header quoted whole, out of s.
func (r *redacting) redact(s string) string {
	r.mu.Lock()
	secrets := append([]string(nil), r.secrets...)
	r.mu.Unlock()
	// The longest first: a pair holds its password.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
}

// clean is an error answer without the remembered secrets and with each message cut to
// maxErrorText. In the registry's JSON ({"errors": [{"code", "message", "detail"}]}) the secrets
// are taken out of each message as decoded and of each detail as JSON (so no spelling of an escape
// hides one), and the answer stays JSON for the registry client to read; any other answer is
// cleaned as text.
func (r *redacting) clean(body string) string {
	var doc struct {
		Errors []struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Detail  json.RawMessage `json:"detail,omitempty"`
		} `json:"errors"`
	}
	if json.Unmarshal([]byte(body), &doc) != nil || len(doc.Errors) == 0 {
		return cut(r.redact(body))
	}
	for i := range doc.Errors {
		e := &doc.Errors[i]
		e.Code = cut(r.redact(e.Code))
		e.Message = cut(r.redact(e.Message))
		if len(e.Detail) > 0 {
			var v any
			if json.Unmarshal(e.Detail, &v) != nil {
				v = string(e.Detail)
			}
			e.Detail, _ = json.Marshal(cut(r.redact(jsonText(v))))
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return cut(r.redact(body))
	}
	return string(out)
}

// jsonText is v as JSON with <, > and & as themselves, so a secret holding one still matches.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func cut(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	s = s[:maxErrorText]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "… (cut)"
}
