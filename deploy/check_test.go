package deploy

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file holds the manifest checker; manifests_test.go runs it on the
// real files and on deliberately broken ones.

// cmdFlags is what one command (or retrainer subcommand) accepts.
type cmdFlags struct {
	flags map[string]bool   // flag name -> takes a value (false: boolean)
	env   map[string]string // MIMLSTREAM_* variable -> its flag
}

// The cli package prints each flag as "  --name[ type]", its usage on
// lines starting "    \t", and last "    \t[$ENV_NAME]".
var (
	helpFlagLine = regexp.MustCompile(`^  --([A-Za-z0-9][A-Za-z0-9_.-]*)( \S+)?$`)
	helpEnvLine  = regexp.MustCompile(`^    \t\[\$([A-Z][A-Z0-9_]*)\]$`)
	helpCmdLine  = regexp.MustCompile(`^  ([a-z][a-z0-9-]*)\s+\S`)
)

// parseHelp reads the flags and their environment variables from a
// command's --help text.
func parseHelp(text string) (cmdFlags, error) {
	f := cmdFlags{flags: map[string]bool{}, env: map[string]string{}}
	pending := ""
	for line := range strings.SplitSeq(text, "\n") {
		if m := helpFlagLine.FindStringSubmatch(line); m != nil {
			if pending != "" {
				return f, fmt.Errorf("flag --%s has no environment variable", pending)
			}
			pending = m[1]
			f.flags[pending] = m[2] != ""
			continue
		}
		if m := helpEnvLine.FindStringSubmatch(line); m != nil {
			if pending == "" {
				return f, fmt.Errorf("variable %s follows no flag", m[1])
			}
			f.env[m[1]] = pending
			pending = ""
		}
	}
	if pending != "" {
		return f, fmt.Errorf("flag --%s has no environment variable", pending)
	}
	if len(f.flags) == 0 {
		return f, errors.New("no flags found in help text")
	}
	return f, nil
}

// parseSubcommands reads the "Commands:" list of a dispatcher's --help.
func parseSubcommands(text string) []string {
	var subs []string
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case strings.HasPrefix(line, "Commands:"):
			in = true
		case in && strings.TrimSpace(line) == "":
			if len(subs) > 0 {
				return subs
			}
		case in:
			if m := helpCmdLine.FindStringSubmatch(line); m != nil {
				subs = append(subs, m[1])
			}
		}
	}
	return subs
}

// A manifest document, kept as a node so it can be decoded by kind.
type doc struct {
	file string
	node *yaml.Node
}

func (d doc) String() string { return d.file }

// readYAML parses every document of a YAML file.
func readYAML(name string, r io.Reader) ([]doc, error) {
	dec := yaml.NewDecoder(r)
	var docs []doc
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, len(docs)+1, err)
		}
		if n.Kind == 0 || (len(n.Content) == 1 && n.Content[0].Tag == "!!null") {
			continue // empty document
		}
		docs = append(docs, doc{file: name, node: &n})
	}
}

// Kubernetes objects, reduced to the fields the checks read.
type (
	meta struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	}
	keyRef struct {
		Name string `yaml:"name"`
		Key  string `yaml:"key"`
	}
	envVar struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
			SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	probe struct {
		HTTPGet *struct {
			Path string    `yaml:"path"`
			Port yaml.Node `yaml:"port"`
		} `yaml:"httpGet"`
	}
	container struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []envVar `yaml:"env"`
		EnvFrom []struct {
			ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
			SecretRef    *struct{ Name string } `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Ports          []containerPort `yaml:"ports"`
		LivenessProbe  *probe          `yaml:"livenessProbe"`
		ReadinessProbe *probe          `yaml:"readinessProbe"`
		StartupProbe   *probe          `yaml:"startupProbe"`
	}
	containerPort struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	}
	podTemplate struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Containers     []container `yaml:"containers"`
			InitContainers []container `yaml:"initContainers"`
		} `yaml:"spec"`
	}
	// workload covers Deployment, StatefulSet, DaemonSet and Job.
	workload struct {
		Kind     string `yaml:"kind"`
		Metadata meta   `yaml:"metadata"`
		Spec     struct {
			Replicas *int `yaml:"replicas"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Strategy struct {
				Type string `yaml:"type"`
			} `yaml:"strategy"`
			Template podTemplate `yaml:"template"`
		} `yaml:"spec"`
	}
	service struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []struct {
				Name       string    `yaml:"name"`
				Port       int       `yaml:"port"`
				TargetPort yaml.Node `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	configMap struct {
		Kind       string            `yaml:"kind"`
		Metadata   meta              `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	hpa struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicas *int `yaml:"minReplicas"`
			MaxReplicas int  `yaml:"maxReplicas"`
		} `yaml:"spec"`
	}
	// scaledObject is KEDA's autoscaler (keda.sh/v1alpha1); it creates an
	// HPA of its own for the target.
	scaledObject struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicaCount *int `yaml:"minReplicaCount"`
			MaxReplicaCount *int `yaml:"maxReplicaCount"`
			Triggers        []struct {
				Type     string            `yaml:"type"`
				Metadata map[string]string `yaml:"metadata"`
			} `yaml:"triggers"`
		} `yaml:"spec"`
	}
	pdb struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	kustomization struct {
		Resources []string `yaml:"resources"`
	}
	composeFile struct {
		Services map[string]composeService `yaml:"services"`
	}
	composeService struct {
		Image       string    `yaml:"image"`
		Build       yaml.Node `yaml:"build"`
		Command     yaml.Node `yaml:"command"`
		Entrypoint  yaml.Node `yaml:"entrypoint"`
		Environment yaml.Node `yaml:"environment"`
		DependsOn   yaml.Node `yaml:"depends_on"`
	}
)

// run is one process of ours found in a manifest.
type run struct {
	where string
	argv  []string
	env   []envValue
}

// envValue is a variable set for a process; known is false when the value
// comes from the cluster at run time (fieldRef, resourceFieldRef).
type envValue struct {
	name, value string
	known       bool
}

// checker accumulates what the manifests define and the problems found.
type checker struct {
	cmds      map[string]cmdFlags          // "annotator", "retrainer serve", ...
	subs      map[string][]string          // dispatcher -> subcommands
	configs   map[string]map[string]string // ConfigMap -> key -> value
	secrets   map[string]map[string]string // Secret -> key -> decoded value
	workloads []workloadAt
	services  []serviceAt
	hpas      []autoscaler
	scaled    []scaledObject
	// external are Secrets created outside the manifests (so that no
	// secret value is committed): name -> the keys they must have.
	external map[string]map[string]bool
	pdbs     []pdb
	runs     []run
	problems []string
	// usedCommands records which commands the manifests run.
	usedCommands map[string][]string // command key -> where
}

// autoscaler is an HPA or a KEDA ScaledObject, reduced to what is checked.
type autoscaler struct {
	kind, name             string
	targetKind, targetName string
	min                    *int
	max                    int
}

type workloadAt struct {
	file string
	w    workload
}

type serviceAt struct {
	file string
	s    service
}

func newChecker(cmds map[string]cmdFlags, subs map[string][]string) *checker {
	return &checker{
		cmds: cmds, subs: subs,
		configs: map[string]map[string]string{}, secrets: map[string]map[string]string{},
		usedCommands: map[string][]string{}, external: map[string]map[string]bool{},
	}
}

// externalSecret declares a Secret that the operator creates outside the
// manifests, with its keys.
func (c *checker) externalSecret(name string, keys ...string) {
	c.external[name] = map[string]bool{}
	for _, k := range keys {
		c.external[name][k] = true
	}
}

func (c *checker) problemf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// ours tells whether an image is one of this project's.
func ours(image string) bool { return strings.Contains(image, "mimlstream") }

// add classifies and records one document. Call check once all are added,
// since references may point to later documents.
func (c *checker) add(d doc) {
	var head struct {
		APIVersion string               `yaml:"apiVersion"`
		Kind       string               `yaml:"kind"`
		Services   map[string]yaml.Node `yaml:"services"`
	}
	if err := d.node.Decode(&head); err != nil {
		// Not a mapping at the top: a config file of another tool.
		return
	}
	decode := func(v any) bool {
		if err := d.node.Decode(v); err != nil {
			c.problemf("%s: %s: %v", d.file, head.Kind, err)
			return false
		}
		return true
	}
	switch {
	case head.Kind == "Kustomization":
		var k kustomization
		if decode(&k) {
			for _, r := range k.Resources {
				if _, err := os.Stat(filepath.Join(filepath.Dir(d.file), r)); err != nil {
					c.problemf("%s: resource %s: %v", d.file, r, err)
				}
			}
		}
	case head.APIVersion != "" && head.Kind != "":
		c.addObject(d, head.Kind, decode)
	case head.Services != nil:
		var f composeFile
		if decode(&f) {
			c.addCompose(d.file, f)
		}
	}
}

func (c *checker) addObject(d doc, kind string, decode func(any) bool) {
	switch kind {
	case "ConfigMap", "Secret":
		var m configMap
		if !decode(&m) {
			return
		}
		values := map[string]string{}
		for k, v := range m.Data {
			if kind == "Secret" {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					c.problemf("%s: Secret/%s: data.%s is not base64: %v", d.file, m.Metadata.Name, k, err)
				}
				v = string(b)
			}
			values[k] = v
		}
		maps.Copy(values, m.StringData)
		if kind == "ConfigMap" {
			c.configs[m.Metadata.Name] = values
		} else {
			c.secrets[m.Metadata.Name] = values
		}
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
		var w workload
		if !decode(&w) {
			return
		}
		c.workloads = append(c.workloads, workloadAt{d.file, w})
	case "Service":
		var s service
		if decode(&s) {
			c.services = append(c.services, serviceAt{d.file, s})
		}
	case "HorizontalPodAutoscaler":
		var h hpa
		if decode(&h) {
			c.hpas = append(c.hpas, autoscaler{kind: "HorizontalPodAutoscaler", name: h.Metadata.Name,
				targetKind: h.Spec.ScaleTargetRef.Kind, targetName: h.Spec.ScaleTargetRef.Name, min: h.Spec.MinReplicas, max: h.Spec.MaxReplicas})
		}
	case "ScaledObject":
		var so scaledObject
		if decode(&so) {
			c.scaled = append(c.scaled, so)
			a := autoscaler{kind: "ScaledObject", name: so.Metadata.Name, targetKind: so.Spec.ScaleTargetRef.Kind,
				targetName: so.Spec.ScaleTargetRef.Name, min: so.Spec.MinReplicaCount, max: 100}
			if a.targetKind == "" {
				a.targetKind = "Deployment" // KEDA's default
			}
			if so.Spec.MaxReplicaCount != nil {
				a.max = *so.Spec.MaxReplicaCount
			}
			if len(so.Spec.Triggers) == 0 {
				c.problemf("%s: ScaledObject/%s: no trigger", d.file, so.Metadata.Name)
			}
			c.hpas = append(c.hpas, a)
		}
	case "PodDisruptionBudget":
		var p pdb
		if decode(&p) {
			c.pdbs = append(c.pdbs, p)
		}
	}
}

func (c *checker) addCompose(file string, f composeFile) {
	for _, name := range slices.Sorted(maps.Keys(f.Services)) {
		s := f.Services[name]
		where := fmt.Sprintf("%s: service %s", file, name)
		for _, dep := range composeDeps(s.DependsOn) {
			if _, ok := f.Services[dep]; !ok {
				c.problemf("%s: depends on unknown service %q", where, dep)
			}
		}
		if !ours(s.Image) && s.Build.Kind == 0 {
			continue
		}
		argv := append(composeArgv(s.Entrypoint), composeArgv(s.Command)...)
		env, err := composeEnv(s.Environment)
		if err != nil {
			c.problemf("%s: environment: %v", where, err)
		}
		c.runs = append(c.runs, run{where: where, argv: argv, env: env})
	}
}

// composeArgv reads a command given as a list or as a string (which
// compose splits like a shell; these manifests use no quoting).
func composeArgv(n yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strings.Fields(n.Value)
	case yaml.SequenceNode:
		var out []string
		for _, e := range n.Content {
			out = append(out, e.Value)
		}
		return out
	}
	return nil
}

// composeEnv returns the variables of a compose environment, given as a
// mapping or as a list of NAME=value.
func composeEnv(n yaml.Node) ([]envValue, error) {
	var names []envValue
	switch n.Kind {
	case 0:
	case yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 {
			if n.Content[i].Value == "<<" {
				return nil, fmt.Errorf("merge keys hide variables from this check; list them")
			}
			names = append(names, envValue{name: n.Content[i].Value, value: n.Content[i+1].Value, known: true})
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			name, value, known := strings.Cut(e.Value, "=")
			names = append(names, envValue{name: name, value: value, known: known})
		}
	default:
		return nil, fmt.Errorf("neither a mapping nor a list")
	}
	return names, nil
}

func composeDeps(n yaml.Node) []string {
	switch n.Kind {
	case yaml.SequenceNode:
		var out []string
		for _, e := range n.Content {
			out = append(out, e.Value)
		}
		return out
	case yaml.MappingNode:
		var out []string
		for i := 0; i < len(n.Content); i += 2 {
			out = append(out, n.Content[i].Value)
		}
		return out
	}
	return nil
}

// check runs every cross-document check; call it after adding all docs.
func (c *checker) check() {
	for _, wa := range c.workloads {
		c.checkWorkload(wa)
	}
	for _, sa := range c.services {
		c.checkService(sa)
	}
	scaledBy := map[string][]string{}
	for _, h := range c.hpas {
		i := slices.IndexFunc(c.workloads, func(wa workloadAt) bool {
			return wa.w.Kind == h.targetKind && wa.w.Metadata.Name == h.targetName
		})
		if i < 0 {
			c.problemf("%s/%s: scales unknown %s/%s", h.kind, h.name, h.targetKind, h.targetName)
		} else {
			// A replica count in the workload fights the autoscaler: every
			// apply resets it.
			if c.workloads[i].w.Spec.Replicas != nil {
				c.problemf("%s/%s: sets replicas, which %s/%s manages", h.targetKind, h.targetName, h.kind, h.name)
			}
			key := h.targetKind + "/" + h.targetName
			scaledBy[key] = append(scaledBy[key], h.kind+"/"+h.name)
		}
		if h.min != nil && *h.min > h.max {
			c.problemf("%s/%s: minimum replicas > maximum", h.kind, h.name)
		}
	}
	for _, target := range slices.Sorted(maps.Keys(scaledBy)) {
		if by := scaledBy[target]; len(by) > 1 {
			c.problemf("%s: scaled by %d autoscalers (%s), which fight each other", target, len(by), strings.Join(by, ", "))
		}
	}
	for _, p := range c.pdbs {
		if !c.selects(p.Spec.Selector.MatchLabels) {
			c.problemf("PodDisruptionBudget/%s: selector %v matches no workload", p.Metadata.Name, p.Spec.Selector.MatchLabels)
		}
	}
	for _, r := range c.runs {
		c.checkRun(r)
	}
}

// selects reports whether a non-empty label selector matches the pod
// template of some workload.
func (c *checker) selects(sel map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	return slices.ContainsFunc(c.workloads, func(wa workloadAt) bool {
		tl := wa.w.Spec.Template.Metadata.Labels
		for k, v := range sel {
			if tl[k] != v {
				return false
			}
		}
		return true
	})
}

func (c *checker) checkWorkload(wa workloadAt) {
	w := wa.w
	where := fmt.Sprintf("%s: %s/%s", wa.file, w.Kind, w.Metadata.Name)
	tl := w.Spec.Template.Metadata.Labels
	if w.Kind != "Job" {
		if len(w.Spec.Selector.MatchLabels) == 0 {
			c.problemf("%s: empty selector", where)
		}
		for k, v := range w.Spec.Selector.MatchLabels {
			if tl[k] != v {
				c.problemf("%s: selector %s=%s does not match the pod template labels", where, k, v)
			}
		}
	}
	spec := w.Spec.Template.Spec
	for _, ct := range slices.Concat(spec.InitContainers, spec.Containers) {
		cw := fmt.Sprintf("%s container %s", where, ct.Name)
		ports := map[string]bool{}
		for _, p := range ct.Ports {
			ports[p.Name] = true
			ports[strconv.Itoa(p.ContainerPort)] = true
		}
		for name, p := range map[string]*probe{"liveness": ct.LivenessProbe, "readiness": ct.ReadinessProbe, "startup": ct.StartupProbe} {
			if p != nil && p.HTTPGet != nil && !ports[p.HTTPGet.Port.Value] {
				c.problemf("%s: %s probe port %q is not a container port", cw, name, p.HTTPGet.Port.Value)
			}
		}
		var env []envValue
		for _, e := range ct.Env {
			ev := envValue{name: e.Name, value: e.Value, known: e.ValueFrom == nil}
			if e.ValueFrom != nil {
				for _, ref := range []struct {
					kind string
					r    *keyRef
					from map[string]map[string]string
				}{{"ConfigMap", e.ValueFrom.ConfigMapKeyRef, c.configs}, {"Secret", e.ValueFrom.SecretKeyRef, c.secrets}} {
					if ref.r == nil {
						continue
					}
					ev.value, ev.known = ref.from[ref.r.Name][ref.r.Key]
					if ext, ok := c.external[ref.r.Name]; ok && ref.kind == "Secret" && !ev.known {
						// Created by the operator: its value is unknown here.
						if !ext[ref.r.Key] {
							c.problemf("%s: %s: external Secret %s is declared without key %s", cw, e.Name, ref.r.Name, ref.r.Key)
						}
						continue
					}
					if !ev.known {
						c.problemf("%s: %s: %s %s has no key %s", cw, e.Name, ref.kind, ref.r.Name, ref.r.Key)
					}
				}
			}
			env = append(env, ev)
		}
		for _, ef := range ct.EnvFrom {
			var values map[string]string
			switch {
			case ef.ConfigMapRef != nil:
				if values = c.configs[ef.ConfigMapRef.Name]; values == nil {
					c.problemf("%s: envFrom unknown ConfigMap %s", cw, ef.ConfigMapRef.Name)
				}
			case ef.SecretRef != nil:
				if values = c.secrets[ef.SecretRef.Name]; values == nil {
					c.problemf("%s: envFrom unknown Secret %s", cw, ef.SecretRef.Name)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(values)) {
				env = append(env, envValue{name: k, value: values[k], known: true})
			}
		}
		if ours(ct.Image) {
			c.runs = append(c.runs, run{where: cw, argv: slices.Concat(ct.Command, ct.Args), env: env})
		}
	}
}

func (c *checker) checkService(sa serviceAt) {
	s := sa.s
	where := fmt.Sprintf("%s: Service/%s", sa.file, s.Metadata.Name)
	if len(s.Spec.Selector) == 0 {
		c.problemf("%s: empty selector", where)
		return
	}
	var pods []podTemplate
	for _, wa := range c.workloads {
		tl := wa.w.Spec.Template.Metadata.Labels
		match := true
		for k, v := range s.Spec.Selector {
			match = match && tl[k] == v
		}
		if match {
			pods = append(pods, wa.w.Spec.Template)
		}
	}
	if len(pods) == 0 {
		c.problemf("%s: selector %v matches no workload", where, s.Spec.Selector)
		return
	}
	for _, p := range s.Spec.Ports {
		target := p.TargetPort.Value
		if target == "" {
			target = strconv.Itoa(p.Port)
		}
		found := false
		for _, pod := range pods {
			for _, ct := range pod.Spec.Containers {
				for _, cp := range ct.Ports {
					found = found || cp.Name == target || strconv.Itoa(cp.ContainerPort) == target
				}
			}
		}
		if !found {
			c.problemf("%s: port %s targets %q, which no selected container exposes", where, p.Name, target)
		}
	}
}

func (c *checker) checkRun(r run) {
	if len(r.argv) == 0 {
		c.problemf("%s: no command (the image has no entrypoint; name the binary)", r.where)
		return
	}
	key := path.Base(r.argv[0])
	args := r.argv[1:]
	if subs, ok := c.subs[key]; ok {
		if len(args) == 0 || !slices.Contains(subs, args[0]) {
			c.problemf("%s: %s needs a subcommand (one of %v), got %q", r.where, key, subs, args)
			return
		}
		key += " " + args[0]
		args = args[1:]
	}
	spec, ok := c.cmds[key]
	if !ok {
		c.problemf("%s: unknown command %q (known: %v)", r.where, key, slices.Sorted(maps.Keys(c.cmds)))
		return
	}
	c.usedCommands[key] = append(c.usedCommands[key], r.where)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			c.problemf("%s: unexpected argument %q to %s", r.where, a, key)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, ok := spec.flags[name]
		switch {
		case !ok:
			c.problemf("%s: %s has no flag --%s", r.where, key, name)
		case takesValue && !hasValue:
			i++ // the value is the next argument
		case !takesValue && hasValue:
			if _, err := strconv.ParseBool(value); err != nil {
				c.problemf("%s: boolean flag --%s=%q: not a boolean", r.where, name, value)
			}
		}
	}
	for _, e := range r.env {
		if !strings.HasPrefix(e.name, "MIMLSTREAM_") {
			continue
		}
		flag, ok := spec.env[e.name]
		if !ok {
			c.problemf("%s: %s reads no variable %s", r.where, key, e.name)
			continue
		}
		// Booleans are the one type known from --help; a wrong one would
		// stop the command at start-up.
		if _, err := strconv.ParseBool(e.value); e.known && !spec.flags[flag] && err != nil {
			c.problemf("%s: %s=%q sets boolean --%s: not a boolean", r.where, e.name, e.value, flag)
		}
	}
}
