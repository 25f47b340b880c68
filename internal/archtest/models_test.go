// Package archtest checks the import structure of the module: rules that
// keep each piece in its room and that the compiler does not enforce.
package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mimlstream/mimlstream"

// goTool returns the go command that runs this test.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	t.Fatal("no go command on PATH and GOROOT unset")
	return ""
}

// goList runs `go list -f format patterns...` and returns its lines.
func goList(t *testing.T, format string, patterns ...string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), append([]string{"list", "-f", format}, patterns...)...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", patterns, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", patterns, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestModelKindsImportNoOtherKind checks that no model kind package
// (internal/models/<kind>) depends, directly or not, on another kind or on
// the evaluation harness: code two kinds share lives below the models
// (internal/solver/..., internal/metriclearn, internal/folds,
// internal/measure), so a kind can be read, changed and linked on its own.
// Test files are not covered: a test may compare two kinds.
func TestModelKindsImportNoOtherKind(t *testing.T) {
	contract := module + "/internal/models"
	catalog := contract + "/catalog"
	harness := module + "/internal/eval"
	// One go list for every package: its import path, then its
	// dependencies (what `go list -deps` prints), space separated.
	lines := goList(t, "{{.ImportPath}} {{join .Deps \" \"}}", contract+"/...")
	deps := map[string][]string{}
	for _, line := range lines {
		f := strings.Fields(line)
		deps[f[0]] = f[1:]
	}
	var kinds []string
	for p := range deps {
		if p != contract && p != catalog {
			kinds = append(kinds, p)
		}
	}
	slices.Sort(kinds)
	// Guard against a vacuous pass (a pattern matching nothing).
	for _, want := range []string{"orlr", "mimlca", "mlca", "misvm", "symil"} {
		if !slices.Contains(kinds, contract+"/"+want) {
			t.Fatalf("kind package %s/%s not found among %v", contract, want, kinds)
		}
	}
	for _, kind := range kinds {
		for _, d := range deps[kind] {
			switch {
			case d == harness || strings.HasPrefix(d, harness+"/"):
				t.Errorf("%s depends on the evaluation harness %s", kind, d)
			case strings.HasPrefix(d, contract+"/") && d != kind:
				t.Errorf("%s depends on another model package %s", kind, d)
			}
		}
	}
}
