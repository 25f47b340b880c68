package deploy

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// commandFlags builds every command under cmd/ and reads the flags and
// environment variables of each (and of each retrainer subcommand) from
// its --help, so the check follows the code with no list kept by hand.
func commandFlags(t *testing.T) (map[string]cmdFlags, map[string][]string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the commands: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var names, pkgs []string
	for _, e := range entries {
		if matches, _ := filepath.Glob(filepath.Join(root, "cmd", e.Name(), "*.go")); e.IsDir() && len(matches) > 0 {
			names = append(names, e.Name())
			pkgs = append(pkgs, "./cmd/"+e.Name())
		}
	}
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool, append([]string{"build", "-o", bin + string(filepath.Separator)}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
	}

	help := func(args ...string) string {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, args[0]), append(args[1:], "--help")...)
		// A clean environment: no MIMLSTREAM_* of the test machine may
		// change what --help prints or make the command do anything.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v --help: %v\n%s", args, err, out)
		}
		return string(out)
	}
	cmds := map[string]cmdFlags{}
	subs := map[string][]string{}
	for _, name := range names {
		text := help(name)
		if ss := parseSubcommands(text); len(ss) > 0 {
			subs[name] = ss
			for _, s := range ss {
				f, err := parseHelp(help(name, s))
				if err != nil {
					t.Fatalf("%s %s --help: %v", name, s, err)
				}
				cmds[name+" "+s] = f
			}
			continue
		}
		f, err := parseHelp(text)
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		cmds[name] = f
	}
	return cmds, subs
}

// TestManifests parses every YAML file under deploy/ and checks that each
// flag and MIMLSTREAM_* variable given to one of our commands exists, that
// references between Kubernetes objects resolve, and the properties the
// deployment relies on (probes, metrics port, a single retrainer).
func TestManifests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the three commands; skipped with -short")
	}
	cmds, subs := commandFlags(t)
	c := newChecker(cmds, subs)
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(p); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests found")
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := readYAML(p, f)
		f.Close()
		if err != nil {
			t.Errorf("parse: %v", err)
			continue
		}
		if len(docs) == 0 {
			t.Errorf("%s: no YAML document", p)
		}
		for _, d := range docs {
			c.add(d)
		}
	}
	c.check()
	for _, p := range c.problems {
		t.Error(p)
	}

	// Every long-running command is deployed both with compose and on
	// Kubernetes.
	for _, key := range []string{"annotator", "ingest", "retrainer serve"} {
		var compose, k8s bool
		for _, where := range c.usedCommands[key] {
			compose = compose || strings.HasPrefix(where, "docker-compose")
			k8s = k8s || strings.HasPrefix(where, "k8s"+string(filepath.Separator))
		}
		if !compose || !k8s {
			t.Errorf("%s: run by compose %v, by k8s %v; want both", key, compose, k8s)
		}
	}
	checkK8sPolicy(t, c)
	checkDockerfile(t, c)
}

// checkK8sPolicy checks what the platform relies on: the annotator is
// probed on /healthz and /readyz and exposes a metrics port; the retrainer
// runs as exactly one replica, replaced by Recreate so that two never
// promote concurrently during a rollout.
func checkK8sPolicy(t *testing.T, c *checker) {
	t.Helper()
	found := map[string]bool{}
	for _, wa := range c.workloads {
		w := wa.w
		for _, ct := range w.Spec.Template.Spec.Containers {
			if !ours(ct.Image) || len(ct.Command) == 0 {
				continue
			}
			argv := slices.Concat(ct.Command, ct.Args)
			key := filepath.Base(argv[0])
			if _, ok := c.subs[key]; ok && len(argv) > 1 {
				key += " " + argv[1]
			}
			found[key] = true
			switch key {
			case "annotator":
				if w.Kind != "Deployment" {
					t.Errorf("annotator runs as a %s, want a Deployment", w.Kind)
				}
				if ct.LivenessProbe == nil || ct.LivenessProbe.HTTPGet == nil || ct.LivenessProbe.HTTPGet.Path != "/healthz" {
					t.Error("annotator: no liveness probe on /healthz")
				}
				if ct.ReadinessProbe == nil || ct.ReadinessProbe.HTTPGet == nil || ct.ReadinessProbe.HTTPGet.Path != "/readyz" {
					t.Error("annotator: no readiness probe on /readyz")
				}
				if !slices.ContainsFunc(ct.Ports, func(p containerPort) bool { return p.Name == "metrics" }) {
					t.Error("annotator: no container port named metrics")
				}
			case "retrainer serve":
				if w.Kind != "Deployment" || w.Spec.Replicas == nil || *w.Spec.Replicas != 1 || w.Spec.Strategy.Type != "Recreate" {
					t.Errorf("retrainer: %s replicas %v strategy %q; want a Deployment of 1 replica with strategy Recreate",
						w.Kind, w.Spec.Replicas, w.Spec.Strategy.Type)
				}
			}
		}
	}
	for _, key := range []string{"annotator", "ingest", "retrainer serve"} {
		if !found[key] {
			t.Errorf("no Kubernetes workload runs %s", key)
		}
	}
	var metricsService bool
	for _, sa := range c.services {
		for _, p := range sa.s.Spec.Ports {
			metricsService = metricsService || p.Name == "metrics"
		}
	}
	if !metricsService {
		t.Error("no Service exposes a port named metrics")
	}
}

// checkDockerfile checks that the image builds every command the
// manifests run.
func checkDockerfile(t *testing.T, c *checker) {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for key := range c.usedCommands {
		name, _, _ := strings.Cut(key, " ")
		if !strings.Contains(string(b), "./cmd/"+name) {
			t.Errorf("Dockerfile does not build ./cmd/%s", name)
		}
	}
}
