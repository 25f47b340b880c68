package deploy

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildCommands builds every command under cmd/ into a temporary
// directory and returns it with the commands' names.
func buildCommands(t *testing.T) (bin string, names []string) {
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
	var pkgs []string
	for _, e := range entries {
		if matches, _ := filepath.Glob(filepath.Join(root, "cmd", e.Name(), "*.go")); e.IsDir() && len(matches) > 0 {
			names = append(names, e.Name())
			pkgs = append(pkgs, "./cmd/"+e.Name())
		}
	}
	bin = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool, append([]string{"build", "-o", bin + string(filepath.Separator)}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
	}
	return bin, names
}

// commandFlags reads the flags and environment variables of every command
// built in bin (and of each subcommand of a dispatcher such as retrainer
// or mimlctl) from its --help, so the check follows the code with no list
// kept by hand.
func commandFlags(t *testing.T, bin string, names []string) (map[string]cmdFlags, map[string][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

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
	bin, names := buildCommands(t)
	cmds, subs := commandFlags(t, bin, names)
	c := newChecker(cmds, subs)
	// Created by the operator (deploy/k8s/config.yaml says how), so that
	// no secret value is committed.
	c.externalSecret("mimlstream-redis", "username", "password")
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
	for _, key := range []string{"annotator", "ingest", "retrainer serve", "mimlctl status"} {
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

// checkK8sPolicy checks what the platform relies on: every service of ours
// has a readiness probe; the annotator is probed on /healthz and /readyz,
// exposes a metrics port and is scaled by KEDA on its consumer group's lag
// on the bags topic (and its Deployment sets no replicas); the retrainer
// runs as exactly one replica, replaced by Recreate so that two never
// promote concurrently during a rollout; no Secret value is committed.
func checkK8sPolicy(t *testing.T, c *checker) {
	t.Helper()
	for name, values := range c.secrets {
		for k, v := range values {
			if v != "" {
				t.Errorf("Secret %s commits a value for %s: create it outside the manifests (see k8s/config.yaml)", name, k)
			}
		}
	}
	found := map[string]bool{}
	for _, wa := range c.workloads {
		w := wa.w
		for _, ct := range w.Spec.Template.Spec.Containers {
			if !ours(ct.Image) || len(ct.Command) == 0 {
				continue
			}
			if ct.ReadinessProbe == nil || ct.ReadinessProbe.HTTPGet == nil {
				t.Errorf("%s/%s container %s: no HTTP readiness probe", w.Kind, w.Metadata.Name, ct.Name)
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
				checkKEDA(t, c, w.Metadata.Name)
			case "ingest":
				if ct.ReadinessProbe == nil || ct.ReadinessProbe.HTTPGet == nil || ct.ReadinessProbe.HTTPGet.Path != "/readyz" {
					t.Error("ingest: no readiness probe on /readyz")
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
	if !found["mimlctl status"] {
		t.Error("no Kubernetes workload runs mimlctl status")
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

// checkKEDA checks that a ScaledObject scales the annotator Deployment on
// the lag of the annotators' consumer group on the bags topic, with the
// brokers of the ConfigMap and at most one replica per partition.
func checkKEDA(t *testing.T, c *checker, deployment string) {
	t.Helper()
	cfg := c.configs["mimlstream-config"]
	var n int
	for _, so := range c.scaled {
		if so.Spec.ScaleTargetRef.Name != deployment {
			continue
		}
		n++
		partitions, _ := strconv.Atoi(cfg["partitions"])
		if so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount > partitions {
			t.Errorf("ScaledObject/%s: maxReplicaCount %v, want at most the %d partitions", so.Metadata.Name, so.Spec.MaxReplicaCount, partitions)
		}
		for _, tr := range so.Spec.Triggers {
			want := map[string]string{"consumerGroup": "annotator", "topic": "bags", "bootstrapServers": cfg["brokers"]}
			if tr.Type != "kafka" {
				t.Errorf("ScaledObject/%s: trigger %q, want kafka (consumer lag)", so.Metadata.Name, tr.Type)
				continue
			}
			for k, v := range want {
				if tr.Metadata[k] != v {
					t.Errorf("ScaledObject/%s: %s %q, want %q", so.Metadata.Name, k, tr.Metadata[k], v)
				}
			}
			if _, err := strconv.Atoi(tr.Metadata["lagThreshold"]); err != nil {
				t.Errorf("ScaledObject/%s: lagThreshold %q: %v", so.Metadata.Name, tr.Metadata["lagThreshold"], err)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d ScaledObjects scale the %s Deployment, want 1", n, deployment)
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
