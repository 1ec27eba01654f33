package container

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/rivalbench/rival/safefile"
)

// Pushed is an image in a registry, named by the digest of its manifest.
type Pushed struct {
	Repository string `json:"repository"` // registry/path, as given to Push (normalized)
	Tag        string `json:"tag"`        // the tag pushed
	Digest     string `json:"digest"`     // sha256:<64 hex> of the manifest the registry stored
	LocalID    string `json:"local_id"`   // the local image's ID (sha256:...) that was pushed
}

// Ref is the digest reference nodes pull: repository@sha256:....
func (p Pushed) Ref() string { return p.Repository + "@" + p.Digest }

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Push tags the local image (ID or tag) as target (registry/path[:tag], tag "latest" when none) and
// pushes it through the daemon, with the credentials the Docker config holds for target's registry
// (see RegistryAuth); it returns the manifest digest the registry reported. Progress lines go to
// progress when it is not nil. Credentials never appear in errors or progress.
func (e *Engine) Push(ctx context.Context, image, target string, progress io.Writer) (Pushed, error) {
	named, err := reference.ParseNormalizedNamed(target)
	if err != nil {
		return Pushed{}, fmt.Errorf("push: %q is not an image reference (want registry/path[:tag], e.g. registry.example.com:5000/team/rival-nvd): %w", target, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return Pushed{}, fmt.Errorf("push: %q names a digest; name a repository (and tag) to push to", target)
	}
	named = reference.TagNameOnly(named)
	tagged := named.(reference.Tagged)
	id, err := e.ImageID(ctx, image)
	if err != nil {
		return Pushed{}, fmt.Errorf("push: %w", err)
	}
	ref := reference.FamiliarString(named)
	if err := e.api.ImageTag(ctx, id, reference.FamiliarName(named), tagged.Tag()); err != nil {
		return Pushed{}, fmt.Errorf("push: tag %s as %s: %w", shortImageID(id), ref, err)
	}
	domain := reference.Domain(named)
	auth, err := RegistryAuth(ctx, domain)
	if err != nil {
		return Pushed{}, err
	}
	if auth == "" {
		// The daemon wants the header even for an anonymous push: an empty credential.
		auth = base64.URLEncoding.EncodeToString([]byte("{}"))
	}
	stream, err := e.api.ImagePush(ctx, reference.FamiliarName(named), tagged.Tag(), auth)
	if err != nil {
		return Pushed{}, fmt.Errorf("push %s: %w", ref, err)
	}
	defer stream.Close()
	out := Pushed{Repository: named.Name(), Tag: tagged.Tag(), LocalID: id}
	dec := json.NewDecoder(stream)
	for {
		var m streamMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return Pushed{}, fmt.Errorf("push %s: reading the daemon's progress: %w", ref, err)
		}
		if msg := m.errorMessage(); msg != "" {
			return Pushed{}, fmt.Errorf("push %s to %s: %s%s", ref, domain, msg, pushHint(msg, domain))
		}
		if len(m.Aux) > 0 {
			var aux struct{ Digest string }
			if json.Unmarshal(m.Aux, &aux) == nil && aux.Digest != "" {
				out.Digest = aux.Digest
			}
		}
		if progress != nil && m.Status != "" && m.noProgress() {
			if m.ID != "" {
				fmt.Fprintf(progress, "push: %s: %s\n", m.ID, m.Status)
			} else {
				fmt.Fprintf(progress, "push: %s\n", m.Status)
			}
		}
	}
	if !digestRE.MatchString(out.Digest) {
		return Pushed{}, fmt.Errorf("push %s: the daemon reported no manifest digest (got %q)", ref, out.Digest)
	}
	return out, nil
}

func pushHint(msg, domain string) string {
	switch {
	case strings.Contains(msg, "unauthorized") || strings.Contains(msg, "authentication required") || strings.Contains(msg, "denied") || strings.Contains(msg, "no basic auth credentials"):
		return fmt.Sprintf(": log in to %s first (`docker login %s` stores the credentials Rival reads)", domain, domain)
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf(": %s speaks plain HTTP; give it TLS, or list it in the daemon's insecure-registries", domain)
	}
	return ""
}

func shortImageID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// dockerConfig is the part of ~/.docker/config.json that holds credentials.
type dockerConfig struct {
	Auths       map[string]registry.AuthConfig `json:"auths"`
	CredsStore  string                         `json:"credsStore"`
	CredHelpers map[string]string              `json:"credHelpers"`
}

// DockerConfigPath is the Docker client's config file: $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json.
func DockerConfigPath() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker", "config.json")
}

// RegistryAuth returns the X-Registry-Auth value for registry host (as `docker login HOST` stored it
// in the Docker config: an auths entry, or a credential helper named by credHelpers or credsStore),
// or "" when the config holds nothing for it (an anonymous push). Errors name the file and the host,
// never a secret.
func RegistryAuth(ctx context.Context, host string) (string, error) {
	path := DockerConfigPath()
	data, err := safefile.ReadFile(ctx, path, safefile.LimitConfig)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("docker config %s: %w", path, err)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("docker config %s is not valid JSON (%v): fix or remove it", path, jsonErrorWithoutValue(err))
	}
	keys := []string{host, "https://" + host, "http://" + host, "https://" + host + "/v1/", "https://" + host + "/v2/"}
	if host == "docker.io" {
		keys = append(keys, "https://index.docker.io/v1/")
	}
	helper := cfg.CredHelpers[host]
	if helper == "" {
		helper = cfg.CredsStore
	}
	var ac registry.AuthConfig
	found := false
	for _, k := range keys {
		if a, ok := cfg.Auths[k]; ok {
			ac, found = a, true
			break
		}
	}
	if helper != "" && (!found || (ac.Auth == "" && ac.IdentityToken == "")) {
		if ac, err = fromHelper(ctx, helper, host); err != nil {
			return "", err
		}
		found = ac.Username != "" || ac.Password != "" || ac.IdentityToken != ""
	}
	if !found {
		return "", nil
	}
	if ac.Auth != "" && ac.Username == "" {
		raw, err := base64.StdEncoding.DecodeString(ac.Auth)
		if err != nil {
			return "", fmt.Errorf("docker config %s: the auth entry for %s is not base64: run `docker login %s` again", path, host, host)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", fmt.Errorf("docker config %s: the auth entry for %s is not user:password: run `docker login %s` again", path, host, host)
		}
		ac.Username, ac.Password = user, pass
	}
	ac.Auth, ac.ServerAddress = "", host
	b, err := json.Marshal(ac)
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(b), nil
}

// HelperTimeout bounds a credential helper's answer: one that waits for a passphrase or a PIN on a
// terminal (gpg behind `pass`, a hardware key) never answers a run, which has no terminal to ask on.
var HelperTimeout = 30 * time.Second

// fromHelper asks docker-credential-<helper> for host's credentials, as the Docker client does.
func fromHelper(ctx context.Context, helper, host string) (registry.AuthConfig, error) {
	bin := "docker-credential-" + helper
	hctx, cancel := context.WithTimeout(ctx, HelperTimeout)
	defer cancel()
	cmd := exec.CommandContext(hctx, bin, "get")
	cmd.Stdin = strings.NewReader(host)
	cmd.WaitDelay = time.Second // a helper's own children may hold its output open
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return registry.AuthConfig{}, fmt.Errorf("credential helper %s for %s: %w", bin, host, ctx.Err())
		}
		if hctx.Err() != nil {
			return registry.AuthConfig{}, fmt.Errorf("credential helper %s for %s did not answer within %s; it may be waiting for a passphrase or a PIN, which a run cannot give: unlock it in a terminal first (`%s list`), or run `docker login %s`", bin, host, HelperTimeout, bin, host)
		}
		if strings.Contains(stdout.String()+stderr.String(), "credentials not found") {
			return registry.AuthConfig{}, nil
		}
		return registry.AuthConfig{}, fmt.Errorf("credential helper %s for %s failed (%v): check `%s list`, or run `docker login %s`", bin, host, err, bin, host)
	}
	var c struct{ Username, Secret string }
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		return registry.AuthConfig{}, fmt.Errorf("credential helper %s for %s answered something else than credentials", bin, host)
	}
	if c.Username == "<token>" {
		return registry.AuthConfig{IdentityToken: c.Secret}, nil
	}
	return registry.AuthConfig{Username: c.Username, Password: c.Secret}, nil
}

// jsonErrorWithoutValue keeps a JSON error's position but not the text around it, which may hold a
// credential.
func jsonErrorWithoutValue(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s has the wrong type", te.Field)
	}
	return "unreadable"
}
