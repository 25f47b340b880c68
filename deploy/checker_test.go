package deploy

import (
	"bytes"
	"flag"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
)

// TestParseHelp feeds the parser the usage text of a real cli flag set, so
// a change of the cli format breaks here rather than silently emptying the
// flag lists.
func TestParseHelp(t *testing.T) {
	var out bytes.Buffer
	fs := cli.NewFlagSet("annotator", "Usage: annotator [flags]", &out)
	fs.String("brokers", "", "Kafka `host:port` list")
	fs.Bool("no-feature-cache", false, "do not cache\nmultiline usage")
	fs.Duration("cache-ttl", time.Hour, "TTL")
	var list cli.StringList
	fs.Var(&list, "param", "`key=value`")
	if err := cli.Parse(fs, []string{"--help"}); err != flag.ErrHelp {
		t.Fatalf("Parse(--help) = %v", err)
	}
	got, err := parseHelp(out.String())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"brokers": true, "no-feature-cache": false, "cache-ttl": true, "param": true}
	if !maps.Equal(got.flags, want) {
		t.Errorf("flags = %v, want %v\n%s", got.flags, want, out.String())
	}
	wantEnv := []string{"MIMLSTREAM_ANNOTATOR_BROKERS", "MIMLSTREAM_ANNOTATOR_CACHE_TTL",
		"MIMLSTREAM_ANNOTATOR_NO_FEATURE_CACHE", "MIMLSTREAM_ANNOTATOR_PARAM"}
	if env := slices.Sorted(maps.Keys(got.env)); !slices.Equal(env, wantEnv) {
		t.Errorf("env = %v, want %v", env, wantEnv)
	}
}

func TestParseSubcommands(t *testing.T) {
	text := "Usage: retrainer <command> [flags]\n\nCommands:\n  eval     cross-validate\n  serve    consume and retrain\n\nRun 'retrainer <command> --help'\n"
	if got := parseSubcommands(text); !slices.Equal(got, []string{"eval", "serve"}) {
		t.Errorf("subcommands = %v", got)
	}
}

// TestCheckerFindsMistakes runs the checker on small manifests, each with
// one mistake (or none), against a fixed flag specification.
func TestCheckerFindsMistakes(t *testing.T) {
	cmds := map[string]cmdFlags{
		"annotator": {
			flags: map[string]bool{"brokers": true, "listen": true, "no-feature-cache": false},
			env: map[string]string{"MIMLSTREAM_ANNOTATOR_BROKERS": "brokers", "MIMLSTREAM_ANNOTATOR_LISTEN": "listen",
				"MIMLSTREAM_ANNOTATOR_NO_FEATURE_CACHE": "no-feature-cache"},
		},
		"retrainer serve": {
			flags: map[string]bool{"brokers": true},
			env:   map[string]string{"MIMLSTREAM_RETRAINER_SERVE_BROKERS": "brokers"},
		},
	}
	subs := map[string][]string{"retrainer": {"serve", "eval"}}
	const config = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {brokers: "kafka:9092", cache-off: "yes"}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
data: {flag: dHJ1ZQ==}
`
	deployment := func(container string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: annotator}
spec:
  selector: {matchLabels: {app: annotator}}
  template:
    metadata: {labels: {app: annotator}}
    spec:
      containers:
` + container
	}
	const good = `      - name: annotator
        image: ghcr.io/mimlstream/mimlstream:1
        command: [annotator, --listen=:8080, --no-feature-cache]
        args: [--brokers, "kafka:9092"]
        env:
        - {name: MIMLSTREAM_ANNOTATOR_BROKERS, valueFrom: {configMapKeyRef: {name: cfg, key: brokers}}}
        - {name: OTEL_RESOURCE_ATTRIBUTES, value: "x=y"}
        ports: [{name: metrics, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: metrics}}
`
	const service = `apiVersion: v1
kind: Service
metadata: {name: annotator}
spec:
  selector: {app: annotator}
  ports: [{name: metrics, port: 80, targetPort: metrics}]
`
	tests := []struct {
		name string
		docs []string
		want []string // substrings, one per expected problem; none: clean
	}{
		{name: "clean", docs: []string{config, deployment(good), service}},
		{name: "unknown flag", docs: []string{config, deployment(strings.Replace(good, "--listen=:8080", "--listen-addr=:8080", 1))},
			want: []string{"has no flag --listen-addr"}},
		{name: "value of a flag is not a flag", docs: []string{config, deployment(strings.Replace(good, `args: [--brokers, "kafka:9092"]`, `args: [--brokers, "kafka:9092", stray]`, 1))},
			want: []string{`unexpected argument "stray"`}},
		{name: "variable of another command", docs: []string{config, deployment(strings.Replace(good, "MIMLSTREAM_ANNOTATOR_BROKERS", "MIMLSTREAM_INGEST_BROKERS", 1))},
			want: []string{"reads no variable MIMLSTREAM_INGEST_BROKERS"}},
		{name: "missing config key", docs: []string{config, deployment(strings.Replace(good, "key: brokers", "key: broker", 1))},
			want: []string{"ConfigMap cfg has no key broker"}},
		{name: "missing secret", docs: []string{config, deployment(strings.Replace(good, "configMapKeyRef", "secretKeyRef", 1))},
			want: []string{"Secret cfg has no key brokers"}},
		{name: "probe on unnamed port", docs: []string{config, deployment(strings.Replace(good, "port: metrics}", "port: http}", 1))},
			want: []string{`readiness probe port "http"`}},
		{name: "unknown command", docs: []string{config, deployment(strings.Replace(good, "[annotator,", "[annotate,", 1))},
			want: []string{`unknown command "annotate"`}},
		{name: "no command", docs: []string{config, deployment(strings.Replace(good, "command: [annotator, --listen=:8080, --no-feature-cache]", "", 1))},
			want: []string{"no command"}},
		{name: "service selects nothing", docs: []string{config, deployment(good), strings.Replace(service, "{app: annotator}", "{app: annotater}", 1)},
			want: []string{"matches no workload"}},
		{name: "service targets a missing port", docs: []string{config, deployment(good), strings.Replace(service, "targetPort: metrics", "targetPort: 9090", 1)},
			want: []string{`targets "9090"`}},
		{name: "boolean flag value", docs: []string{config, deployment(strings.Replace(good, "--no-feature-cache]", "--no-feature-cache=yes]", 1))},
			want: []string{`--no-feature-cache="yes": not a boolean`}},
		{name: "boolean from a ConfigMap", docs: []string{config, deployment(withEnv(good, "{name: MIMLSTREAM_ANNOTATOR_NO_FEATURE_CACHE, valueFrom: {configMapKeyRef: {name: cfg, key: cache-off}}}"))}, want: []string{`MIMLSTREAM_ANNOTATOR_NO_FEATURE_CACHE="yes" sets boolean`}},
		{name: "boolean from a Secret, base64", docs: []string{config, deployment(withEnv(good, "{name: MIMLSTREAM_ANNOTATOR_NO_FEATURE_CACHE, valueFrom: {secretKeyRef: {name: sec, key: flag}}}"))}},
		{name: "secret data not base64", docs: []string{config, deployment(good), `apiVersion: v1
kind: Secret
metadata: {name: bad}
data: {k: "not base64!"}
`}, want: []string{"data.k is not base64"}},
		{name: "autoscaler of a missing deployment", docs: []string{config, deployment(good), `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: a}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: annotater}, minReplicas: 1, maxReplicas: 3}
`}, want: []string{"scales unknown Deployment/annotater"}},
		{name: "replicas under an autoscaler", docs: []string{config, strings.Replace(deployment(good), "spec:\n  selector", "spec:\n  replicas: 3\n  selector", 1), `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: a}
spec:
  scaleTargetRef: {name: annotator}
  maxReplicaCount: 4
  triggers: [{type: kafka, metadata: {topic: bags}}]
`}, want: []string{"Deployment/annotator: sets replicas, which ScaledObject/a manages"}},
		{name: "two autoscalers", docs: []string{config, deployment(good), `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: a}
spec:
  scaleTargetRef: {name: annotator}
  triggers: [{type: kafka, metadata: {topic: bags}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: b}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: annotator}, maxReplicas: 3}
`}, want: []string{"scaled by 2 autoscalers"}},
		{name: "scaled object of a missing deployment", docs: []string{config, deployment(good), `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: a}
spec:
  scaleTargetRef: {name: annotater}
  minReplicaCount: 5
  maxReplicaCount: 4
`}, want: []string{"ScaledObject/a: scales unknown Deployment/annotater", "ScaledObject/a: minimum replicas > maximum", "ScaledObject/a: no trigger"}},
		{name: "external secret", docs: []string{config, deployment(withEnv(good, "{name: MIMLSTREAM_ANNOTATOR_LISTEN, valueFrom: {secretKeyRef: {name: ext, key: pw}}}"))}},
		{name: "external secret without the key", docs: []string{config, deployment(withEnv(good, "{name: MIMLSTREAM_ANNOTATOR_LISTEN, valueFrom: {secretKeyRef: {name: ext, key: user}}}"))},
			want: []string{"external Secret ext is declared without key user"}},
		{name: "disruption budget selects nothing", docs: []string{config, deployment(good), `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: a}
spec: {minAvailable: 1, selector: {matchLabels: {app: other}}}
`}, want: []string{"PodDisruptionBudget/a: selector"}},
		{name: "compose merge key", docs: []string{`x-env: &env {MIMLSTREAM_ANNOTATOR_BROKERS: "kafka:9092"}
services:
  annotator:
    image: mimlstream:dev
    command: [annotator]
    environment: {<<: *env}
`}, want: []string{"merge keys"}},
		{name: "compose", docs: []string{`services:
  redis: {image: redis:7}
  retrainer:
    image: mimlstream:dev
    command: [retrainer, serve, --brokers=kafka:9092, --redis=redis:6379]
    environment: {MIMLSTREAM_RETRAINER_SERVE_BROKERS: "kafka:9092", MIMLSTREAM_RETRAINER_BROKERS: "x"}
    depends_on: [redis, kafka]
`}, want: []string{"has no flag --redis", "reads no variable MIMLSTREAM_RETRAINER_BROKERS", `unknown service "kafka"`}},
		{name: "compose without subcommand", docs: []string{`services:
  retrainer:
    build: {context: .., dockerfile: deploy/Dockerfile}
    command: retrainer --brokers=kafka:9092
`}, want: []string{"needs a subcommand"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(cmds, subs)
			c.externalSecret("ext", "pw")
			for i, d := range tc.docs {
				docs, err := readYAML(tc.name, strings.NewReader(d))
				if err != nil {
					t.Fatalf("doc %d: %v", i, err)
				}
				for _, d := range docs {
					c.add(d)
				}
			}
			c.check()
			if len(c.problems) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", c.problems, len(tc.want), tc.want)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(c.problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem mentions %q in %q", w, c.problems)
				}
			}
		})
	}
}

// withEnv adds one entry to the env list of the container fixture.
func withEnv(container, entry string) string {
	const anchor = "        env:\n"
	return strings.Replace(container, anchor, anchor+"        - "+entry+"\n", 1)
}

func TestReadYAMLErrors(t *testing.T) {
	if _, err := readYAML("bad", strings.NewReader("a: [1, 2\n")); err == nil {
		t.Error("malformed YAML accepted")
	}
	docs, err := readYAML("multi", strings.NewReader("---\na: 1\n---\n---\nb: 2\n"))
	if err != nil || len(docs) != 2 {
		t.Errorf("multi-document: %d docs, %v; want 2", len(docs), err)
	}
}
