package archtest

// The tests of this file check what each command links and who may import
// the development and test infrastructure.

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// modPath is the module path.
const modPath = "github.com/mimlstream/mimlstream"

// Packages a production binary must not link, by import path prefix.
const (
	models    = modPath + "/internal/models" // the contract and every model kind
	kfake     = "github.com/twmb/franz-go"   // the embedded broker's Kafka implementation
	miniredis = "github.com/alicebob/miniredis"
	plot      = "gonum.org/v1/plot"
	embedded  = modPath + "/internal/embedded"
	testsup   = modPath + "/internal/testsupport"
	// The generic JSON Schema validator: the services validate bags with
	// the typed decoder (wire); the generic one is the tests' reference.
	jsonschema = "github.com/santhosh-tekuri/jsonschema"
)

// graph is the import graph below some packages, from go list -deps.
type graph map[string][]string

// depsOf returns the import graph of the packages pkgs link (test files
// excluded), as the go command sees it from the module root.
func depsOf(t *testing.T, pkgs ...string) graph {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	g := graph{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			g[f[0]] = f[1:]
		}
	}
	return g
}

// under reports whether pkg is prefix or a package below it.
func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// chain returns the import chain from root to the first package under
// prefix found breadth-first, or nil when root does not link one.
func (g graph) chain(root, prefix string) []string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if under(p, prefix) {
			var c []string
			for ; p != ""; p = parent[p] {
				c = append(c, p)
			}
			slices.Reverse(c)
			return c
		}
		for _, q := range g[p] {
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// TestCommandsLinkOnlyWhatTheyRun fails when a service command links code it
// does not run: ingest any model code, the embedded broker (kfake) or the
// embedded Redis (miniredis); the annotator kfake, miniredis or the plotting
// library; the retrainer kfake or miniredis (its offline eval subcommand
// plots, so gonum/plot is allowed there). No command links the embedded or
// test-support packages, nor the generic JSON Schema validator.
func TestCommandsLinkOnlyWhatTheyRun(t *testing.T) {
	rules := []struct {
		cmd       string
		forbidden []string
	}{
		{"./cmd/ingest", []string{models, kfake, miniredis, plot, embedded, testsup, jsonschema}},
		{"./cmd/annotator", []string{kfake, miniredis, plot, embedded, testsup, jsonschema}},
		{"./cmd/retrainer", []string{kfake, miniredis, embedded, testsup, jsonschema}},
		{"./cmd/mimlctl", []string{miniredis, testsup, jsonschema}},
	}
	for _, r := range rules {
		t.Run(strings.TrimPrefix(r.cmd, "./cmd/"), func(t *testing.T) {
			g := depsOf(t, r.cmd)
			root := modPath + strings.TrimPrefix(r.cmd, ".")
			if _, ok := g[root]; !ok {
				t.Fatalf("go list did not report %s", root)
			}
			for _, f := range r.forbidden {
				if c := g.chain(root, f); c != nil {
					t.Errorf("%s links %s:\n\t%s", r.cmd, f, strings.Join(c, "\n\t-> "))
				}
			}
		})
	}
}

// TestDevInfrastructureStaysOutOfProduction fails when a package other than
// the demo, mimlctl, the embedded servers themselves and the test-support packages
// imports internal/embedded or internal/testsupport in its non-test files.
func TestDevInfrastructureStaysOutOfProduction(t *testing.T) {
	allowed := func(p string) bool {
		// mimlctl is dev and operator tooling: its `broker` subcommand is the
		// embedded broker.
		return under(p, embedded) || under(p, testsup) || p == modPath+"/internal/demo" || p == modPath+"/cmd/demo" || p == modPath+"/cmd/mimlctl"
	}
	g := depsOf(t, "./...")
	checked := 0
	for p, imports := range g {
		if !under(p, modPath) || allowed(p) {
			continue
		}
		checked++
		for _, q := range imports {
			if under(q, embedded) || under(q, testsup) {
				t.Errorf("%s imports %s", p, q)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages of the module checked: go list output not understood", checked)
	}
}
