package container

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzDockerignore: any .dockerignore gives a build context or an error
// naming it, never a panic, and the Dockerfile is always in the context
// (the daemon needs it, as the docker CLI keeps it).
func FuzzDockerignore(f *testing.F) {
	for _, s := range []string{"*.log\n!keep.log\n", "# comment\n\n**/sub\n", "!\n", "[\n", "../outside\n", "\\\n", "*\n!sub/b\n", "Dockerfile\n.dockerignore\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		root := t.TempDir()
		for name, data := range map[string]string{".dockerignore": content, "Dockerfile": "FROM scratch\n", "a.log": "x", "keep.log": "y", "sub/b": "z"} {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files, err := ContextFiles(root, ContextOptions{})
		if err != nil {
			return
		}
		if !slices.Contains(files, "Dockerfile") {
			t.Fatalf(".dockerignore %q dropped the Dockerfile: %v", content, files)
		}
	})
}
