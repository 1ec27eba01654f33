package container

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTree creates files (name -> content) under dir; a name ending in "/"
// is an empty directory.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if name[len(name)-1] == '/' {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestContextFilesFollowDockerignore(t *testing.T) {
	tree := map[string]string{
		"Dockerfile":              "FROM scratch\n",
		"main.go":                 "package main\n",
		"README.md":               "readme\n",
		"docs/a.md":               "a\n",
		"docs/keep.md":            "keep\n",
		"docs/deep/b.md":          "b\n",
		"data/shard.bin":          "0123",
		"data/keep/tokenizer.txt": "tok\n",
		"output/run/log.txt":      "log\n",
		"pkg/x_test.go":           "package x\n",
		"pkg/sub/y_test.go":       "package y\n",
		"pkg/sub/y.go":            "package y\n",
		"secrets.env":             "HF_TOKEN=hf_secret\n",
		"conf/secrets.env":        "HF_TOKEN=hf_secret\n",
		".git/HEAD":               "ref: refs/heads/main\n",
		".rival/state":            "x\n",
		"cachedir/blobs/ab/cd":    "blob\n",
	}
	cases := []struct {
		name      string
		ignore    string
		exclude   []string
		want      []string
		wantNoDoc bool
	}{
		{
			name:   "no dockerignore keeps all but the never-sent paths",
			ignore: "",
			want: []string{"Dockerfile", "README.md", "cachedir/", "cachedir/blobs/", "cachedir/blobs/ab/", "cachedir/blobs/ab/cd",
				"conf/", "data/", "data/keep/", "data/keep/tokenizer.txt", "data/shard.bin",
				"docs/", "docs/a.md", "docs/deep/", "docs/deep/b.md", "docs/keep.md", "main.go",
				"output/", "output/run/", "output/run/log.txt",
				"pkg/", "pkg/sub/", "pkg/sub/y.go", "pkg/sub/y_test.go", "pkg/x_test.go"},
		},
		{
			name:    "the cache directory is never sent",
			ignore:  "docs\noutput\npkg\ndata\n",
			exclude: []string{"cachedir"},
			want:    []string{".dockerignore", "Dockerfile", "README.md", "conf/", "main.go"},
		},
		{
			name:   "exception re-includes a file inside an excluded folder",
			ignore: "docs\n!docs/keep.md\ndata\n!data/keep\noutput\npkg\ncachedir\n",
			want:   []string{".dockerignore", "Dockerfile", "README.md", "conf/", "data/keep/", "data/keep/tokenizer.txt", "docs/keep.md", "main.go"},
		},
		{
			name:   "double star matches at any depth",
			ignore: "**/*_test.go\n**/*.md\ndata\noutput\ncachedir\n",
			want:   []string{".dockerignore", "Dockerfile", "conf/", "docs/", "docs/deep/", "main.go", "pkg/", "pkg/sub/", "pkg/sub/y.go"},
		},
		{
			name:   "secrets.env stays out even when dockerignore asks for it",
			ignore: "*\n!secrets.env\n!conf\n!conf/secrets.env\n!**/secrets.env\n!main.go\n",
			want:   []string{".dockerignore", "Dockerfile", "conf/", "main.go"},
		},
		{
			name:   "the Dockerfile and .dockerignore are kept even when ignored",
			ignore: "*\n",
			want:   []string{".dockerignore", "Dockerfile"},
		},
		{
			name:   "comments, blank lines and leading slashes",
			ignore: "# a comment\n\n/docs\n  /output/  \ndata\npkg\ncachedir\n",
			want:   []string{".dockerignore", "Dockerfile", "README.md", "conf/", "main.go"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tree)
			if tc.ignore != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte(tc.ignore), 0o644))
			}
			exclude := tc.exclude
			for i, e := range exclude {
				exclude[i] = filepath.Join(dir, e) // absolute, as callers pass the cache dir
			}
			got, err := ContextFiles(dir, ContextOptions{Exclude: exclude})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assertNoSecrets(t, dir, ContextOptions{Exclude: exclude})
		})
	}
}

// assertNoSecrets reads the real tar stream, not the plan.
func assertNoSecrets(t *testing.T, dir string, opt ContextOptions) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteContext(&buf, dir, opt))
	assert.NotContains(t, buf.String(), "hf_secret", "a secret reached the build context")
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.NotEqual(t, SecretsFile, filepath.Base(h.Name))
	}
}

func TestContextRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"Dockerfile": "FROM scratch\n"})

	_, err := ContextFiles(filepath.Join(dir, "missing"), ContextOptions{})
	assert.ErrorContains(t, err, "missing")

	_, err = ContextFiles(dir, ContextOptions{Dockerfile: "amd.Dockerfile"})
	assert.ErrorContains(t, err, "amd.Dockerfile")

	_, err = ContextFiles(dir, ContextOptions{Dockerfile: "../Dockerfile"})
	assert.ErrorContains(t, err, "outside the build context")

	_, err = ContextFiles(dir, ContextOptions{Exclude: []string{dir}})
	assert.ErrorContains(t, err, "is itself excluded")

	// A path outside the context is simply not in it.
	_, err = ContextFiles(dir, ContextOptions{Exclude: []string{t.TempDir()}})
	assert.NoError(t, err)
}

func TestContextDigestIsStable(t *testing.T) {
	files := map[string]string{
		"Dockerfile":    "FROM scratch\nCOPY . /\n",
		"a.txt":         "alpha\n",
		"sub/b.txt":     "beta\n",
		"sub/deep/c.sh": "#!/bin/sh\n",
	}
	one, two := t.TempDir(), t.TempDir()
	writeTree(t, one, files)
	writeTree(t, two, files)
	// Different times and group/other permission bits must not matter.
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	require.NoError(t, filepath.Walk(two, func(p string, _ os.FileInfo, err error) error {
		require.NoError(t, err)
		return os.Chtimes(p, old, old)
	}))
	require.NoError(t, os.Chmod(filepath.Join(two, "a.txt"), 0o664))
	require.NoError(t, os.Chmod(filepath.Join(one, "sub/deep/c.sh"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(two, "sub/deep/c.sh"), 0o775))

	d1, err := ContextDigest(one, ContextOptions{})
	require.NoError(t, err)
	d2, err := ContextDigest(two, ContextOptions{})
	require.NoError(t, err)
	assert.Len(t, d1, 64)
	assert.Equal(t, d1, d2, "same names, contents and exec bits must give the same digest")

	again, err := ContextDigest(one, ContextOptions{})
	require.NoError(t, err)
	assert.Equal(t, d1, again)

	// Headers carry no time, owner or host-specific mode.
	var buf bytes.Buffer
	require.NoError(t, WriteContext(&buf, two, ContextOptions{}))
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.True(t, h.ModTime.Equal(time.Unix(0, 0)), h.Name)
		assert.Zero(t, h.Uid, h.Name)
		assert.Zero(t, h.Gid, h.Name)
		assert.Empty(t, h.Uname, h.Name)
		switch h.Name {
		case "sub/deep/c.sh":
			assert.Equal(t, int64(0o755), h.Mode)
		case "a.txt":
			assert.Equal(t, int64(0o644), h.Mode)
		}
	}

	// Each kind of change moves the digest.
	changes := map[string]func(dir string){
		"content":  func(dir string) { writeTree(t, dir, map[string]string{"a.txt": "ALPHA\n"}) },
		"new file": func(dir string) { writeTree(t, dir, map[string]string{"sub/new.txt": ""}) },
		"exec bit": func(dir string) { require.NoError(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o755)) },
		"rename": func(dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "a.txt"), filepath.Join(dir, "z.txt")))
		},
		"empty dir": func(dir string) { writeTree(t, dir, map[string]string{"emptydir/": ""}) },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, files)
			require.NoError(t, os.Chmod(filepath.Join(dir, "sub/deep/c.sh"), 0o755))
			change(dir)
			d, err := ContextDigest(dir, ContextOptions{})
			require.NoError(t, err)
			assert.NotEqual(t, d1, d)
		})
	}

	// Neither ignored files nor secrets move it.
	dir := t.TempDir()
	writeTree(t, dir, files)
	require.NoError(t, os.Chmod(filepath.Join(dir, "sub/deep/c.sh"), 0o755))
	writeTree(t, dir, map[string]string{"secrets.env": "HF_TOKEN=hf_secret\n", ".git/HEAD": "x"})
	d, err := ContextDigest(dir, ContextOptions{})
	require.NoError(t, err)
	assert.Equal(t, d1, d)
}

func TestContextKeepsSymlinks(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"Dockerfile": "FROM scratch\n", "target.txt": "t\n"})
	require.NoError(t, os.Symlink("target.txt", filepath.Join(dir, "link")))
	var buf bytes.Buffer
	require.NoError(t, WriteContext(&buf, dir, ContextOptions{}))
	tr := tar.NewReader(&buf)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if h.Name == "link" {
			found = true
			assert.Equal(t, byte(tar.TypeSymlink), h.Typeflag)
			assert.Equal(t, "target.txt", h.Linkname)
		}
	}
	assert.True(t, found)
}

// The repository's own .dockerignore sends only the Dockerfiles, so the
// image key does not move on every source edit.
func TestRepositoryContextHoldsOnlyDockerfiles(t *testing.T) {
	for _, df := range []string{"amd.Dockerfile", "nvd.Dockerfile"} {
		got, err := ContextFiles("..", ContextOptions{Dockerfile: df})
		require.NoError(t, err)
		assert.Contains(t, got, df)
		assert.Contains(t, got, ".dockerignore")
		for _, name := range got {
			assert.True(t, name == ".dockerignore" || strings.HasSuffix(name, ".Dockerfile"),
				"%s is in the image context: the allow-list in .dockerignore should keep it out", name)
		}
	}
}

func BenchmarkContextDigest(b *testing.B) {
	dir := b.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for i := 0; i < 32; i++ {
		p := filepath.Join(dir, "d", string(rune('a'+i%26)), "f"+string(rune('a'+i)))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, big, 0o644))
	}
	require.NoError(b, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644))
	b.SetBytes(32 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ContextDigest(dir, ContextOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
