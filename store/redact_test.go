package store

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Whatever a registry answers, what reaches an error holds no remembered secret, and each of its
// messages is cut.
func FuzzRedactErrorBody(f *testing.F) {
	f.Add("team", "pa55word", `{"errors":[{"code":"DENIED","message":"pa55word","detail":{"h":"Basic dGVhbTpwYTU1d29yZA=="}}]}`)
	f.Add("u", "secret-1", "plain text secret-1 "+strings.Repeat("é", 600))
	f.Add("team", "pa55word", `{"errors":[{"code":"X","message":"\u0070a55word","detail":"pa\u0035\u0035word"}]}`)
	f.Add("team", `pa"55\word`, `{"errors":[{"code":"X","message":"m","detail":{"k":"pa\"55\\word"}}]}`)
	f.Fuzz(func(t *testing.T, user, pass, body string) {
		if len(pass) < 4 || strings.ContainsAny(user+pass, ":") {
			return
		}
		r := &redacting{}
		b64 := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		r.remember("Basic " + b64)
		out := r.clean(body)
		for _, secret := range []string{pass, b64, user + ":" + pass} {
			if strings.Contains(out, secret) && !strings.Contains(r.clean(strings.ReplaceAll(body, secret, "")), secret) {
				t.Fatalf("%q kept %q: %q", body, secret, out)
			}
		}
		if len(out) > maxErrorBody*2+maxErrorText*8 {
			t.Fatalf("%d bytes out of %d", len(out), len(body))
		}
	})
}
