package deploy

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mimlstream/mimlstream/internal/stream/retrain"
)

// servicePorts are the HTTP ports of the services, one for each, as the
// binaries and the README have them: the retrainer's default, and the
// ingest port of the README's walkthrough (ingest has no default: its
// --listen turns HTTP on).
func servicePorts(t *testing.T) map[string]string {
	_, retrainer, err := net.SplitHostPort(retrain.DefaultServeConfig().Listen)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(`--listen :8082`)") {
		t.Fatal("README.md no longer gives ingest's port as `--listen :8082`: update servicePorts")
	}
	return map[string]string{"RETRAINER_SERVE": retrainer, "INGEST": "8082", "ANNOTATOR": "8080", "MIMLCTL_STATUS": "8090"}
}

// TestPortsAgree: docker-compose.yml and the Kubernetes manifests give
// each service the port the binaries and the README give it, publish and
// scrape the port it listens on, and point the status page at the
// retrainer's.
func TestPortsAgree(t *testing.T) {
	want := servicePorts(t)
	listenPort := func(env map[string]string) (svc, port string) {
		for k, v := range env {
			if s, ok := strings.CutSuffix(strings.TrimPrefix(k, "MIMLSTREAM_"), "_LISTEN"); ok && strings.HasPrefix(k, "MIMLSTREAM_") {
				_, p, err := net.SplitHostPort(v)
				if err != nil {
					t.Errorf("%s=%q: %v", k, v, err)
				}
				return s, p
			}
		}
		return "", ""
	}
	checkRetrainerURL := func(where, u string) {
		pu, err := url.Parse(u)
		if err != nil || pu.Port() != want["RETRAINER_SERVE"] {
			t.Errorf("%s: the status page reads the retrainer at %q, which listens on :%s", where, u, want["RETRAINER_SERVE"])
		}
	}

	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	raw, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name, s := range compose.Services {
		svc, port := listenPort(s.Environment)
		if svc == "" {
			continue
		}
		checked++
		if w, ok := want[svc]; ok && port != w {
			t.Errorf("docker-compose.yml %s listens on :%s; the binaries and the README say :%s", name, port, w)
		}
		var published []string
		for _, p := range s.Ports {
			published = append(published, p[strings.LastIndexByte(p, ':')+1:])
		}
		if !slices.Contains(published, port) {
			t.Errorf("docker-compose.yml %s listens on :%s but publishes %q", name, port, s.Ports)
		}
		if u, ok := s.Environment["MIMLSTREAM_MIMLCTL_STATUS_RETRAINER"]; ok {
			checkRetrainerURL("docker-compose.yml", u)
		}
	}

	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(raw), "\n---") {
			var d struct {
				Kind string `yaml:"kind"`
				Spec struct {
					Template struct {
						Metadata struct {
							Annotations map[string]string `yaml:"annotations"`
						} `yaml:"metadata"`
						Spec struct {
							Containers []struct {
								Env []struct {
									Name  string `yaml:"name"`
									Value string `yaml:"value"`
								} `yaml:"env"`
								Ports []struct {
									ContainerPort int `yaml:"containerPort"`
								} `yaml:"ports"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
				continue
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				env := map[string]string{}
				for _, e := range c.Env {
					env[e.Name] = e.Value
				}
				svc, port := listenPort(env)
				if svc == "" {
					continue
				}
				checked++
				if w, ok := want[svc]; ok && port != w {
					t.Errorf("%s listens on :%s; the binaries and the README say :%s", f, port, w)
				}
				var cports []string
				for _, p := range c.Ports {
					cports = append(cports, strconv.Itoa(p.ContainerPort))
				}
				if !slices.Contains(cports, port) {
					t.Errorf("%s listens on :%s but declares container ports %q", f, port, cports)
				}
				if p, ok := d.Spec.Template.Metadata.Annotations["prometheus.io/port"]; ok && p != port {
					t.Errorf("%s listens on :%s but is scraped on :%s", f, port, p)
				}
				if u, ok := env["MIMLSTREAM_MIMLCTL_STATUS_RETRAINER"]; ok {
					checkRetrainerURL(f, u)
				}
			}
		}
	}
	if checked < 8 {
		t.Fatalf("checked %d services: the files were not read as expected", checked)
	}
	t.Logf("%d services' ports checked", checked)
}
