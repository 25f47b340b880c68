// Package shareddata finds the team's read-only data directory (the
// upstream copies testdata/ was made from) for tests on files too large to
// copy into testdata/, such as the TREC9 text sets. A test that needs such
// a file skips, naming it, when the directory is absent, so the ordinary
// suite runs anywhere.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Env names a directory that overrides the default locations.
const Env = "MIML_SHARED_DATA"

// Dir returns the data directory: $MIML_SHARED_DATA, else ../shared/data
// beside the module root, else /work/shared/data; "" when none exists.
func Dir() string {
	var cands []string
	if d := os.Getenv(Env); d != "" {
		cands = append(cands, d)
	}
	if root := moduleRoot(); root != "" {
		cands = append(cands, filepath.Join(root, "..", "shared", "data"))
	}
	cands = append(cands, "/work/shared/data")
	for _, d := range cands {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// Path returns the file rel inside the data directory, or skips t with a
// message naming the file and how to provide it.
func Path(t testing.TB, rel string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		t.Skipf("shared data directory not found (set %s, or place it at ../shared/data): needs %s", Env, rel)
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not in the shared data directory %s", rel, d)
	}
	return p
}

// moduleRoot walks up from the working directory (a package directory
// under go test) to the directory holding go.mod.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
