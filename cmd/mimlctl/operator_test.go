package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelsOperatorConventions holds `mimlctl models` to the README's
// conventions where an operator's mistakes land: a malformed version or a
// wrong count of arguments is a usage error (exit 2) said without Go
// syntax; a message names a version once; a refusal names the flag that
// overrides it; each action's flags have their own environment variables
// (promote's --force does not force deletes); an empty registry says where
// it looked; a bare model envelope imports, as --help promises.
func TestModelsOperatorConventions(t *testing.T) {
	r := newRegistryEnv(t)
	ctx := t.Context()
	models := func(args ...string) (int, string, string) {
		return runCmd(ctx, append(append([]string{"models"}, args...), r.flags...)...)
	}
	if code, stdout, _ := models("list"); code != 0 || !strings.Contains(stdout, r.prefix) || !strings.Contains(stdout, r.flags[1]) {
		t.Errorf("list of an empty registry: exit %d, %q; want it to name the Redis address %s and the prefix", code, stdout, r.flags[1])
	}
	first := r.fit(t, "../../testdata/mscv2/MSCV2.mat", "dummy", true)
	second := r.fit(t, "../../testdata/mscv2/MSCV2.mat", "dummy", true) // first is previous now

	for _, args := range [][]string{{"show", "1"}, {"show", "V1"}, {"show"}, {"show", "v1", "v2"}, {"promote", "latest"}, {"list", "extra"}} {
		code, _, stderr := models(args...)
		if code != 2 || strings.ContainsAny(stderr, "[]") {
			t.Errorf("models %q: exit %d, stderr %q; want 2 (usage) and no Go slice syntax", args, code, stderr)
		}
	}
	code, _, stderr := models("delete", "v99")
	if code != 1 || strings.Count(stderr, "v99") != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("delete v99: exit %d, stderr %q; want 1, naming v99 once, not found", code, stderr)
	}
	code, _, stderr = models("delete", first.Version)
	if code != 1 || !strings.Contains(stderr, "--force") || strings.Contains(stderr, "(force to") {
		t.Errorf("delete of the previous version: exit %d, stderr %q; want 1 and the flag --force named", code, stderr)
	}
	t.Logf("delete of previous: %s", strings.TrimSpace(stderr))

	// One variable per flag of each action: a forced promotion's variable
	// leaves deletes guarded.
	t.Setenv("MIMLSTREAM_MIMLCTL_MODELS_PROMOTE_FORCE", "true")
	if code, _, stderr := models("delete", first.Version); code != 1 || !strings.Contains(stderr, "previous") {
		t.Errorf("delete with MIMLSTREAM_MIMLCTL_MODELS_PROMOTE_FORCE set: exit %d, %q; want it refused", code, stderr)
	}
	if _, _, stderr := models("delete", "--help"); !strings.Contains(stderr, "$MIMLSTREAM_MIMLCTL_MODELS_DELETE_FORCE") {
		t.Errorf("delete --help does not name its own variable:\n%s", stderr)
	}
	t.Setenv("MIMLSTREAM_MIMLCTL_MODELS_DELETE_FORCE", "true")
	if code, stdout, stderr := models("delete", first.Version); code != 0 {
		t.Errorf("delete with MIMLSTREAM_MIMLCTL_MODELS_DELETE_FORCE set: exit %d, %q %q", code, stdout, stderr)
	}

	// A bare model envelope (what `retrainer fit` builds) imports.
	blob, _, err := r.reg.Get(ctx, second.Version)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(file, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := models("import", file); code != 0 || !strings.Contains(stdout, "imported as v3") {
		t.Errorf("import of a bare envelope: exit %d, %q %q", code, stdout, stderr)
	}
}

// TestTailOwnFlagsAndEmptyTopic: `mimlctl tail --help` lists the flags
// tail reads (no topic creation, partitions or retention of the services),
// and a topic with no messages is said to be empty rather than printing
// nothing.
func TestTailOwnFlagsAndEmptyTopic(t *testing.T) {
	_, _, help := runCmd(t.Context(), "tail", "--help")
	for _, f := range []string{"--create-topics", "--partitions", "--retention", "--topic-bags"} {
		if strings.Contains(help, f) {
			t.Errorf("tail --help lists %s, a flag of the services", f)
		}
	}
	if !strings.Contains(help, "--brokers") || !strings.Contains(help, "--follow") {
		t.Errorf("tail --help lacks its own flags:\n%s", help)
	}
	addr, _ := startBroker(t)
	code, stdout, stderr := runCmd(t.Context(), "tail", "dead-letters", "--brokers", addr)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "dead-letters holds no messages") {
		t.Errorf("tail of an empty topic: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestModelsListFitsAScreen: `models list` shows the metrics that tell
// versions apart and says how many more `models show` has, instead of a
// row of every metric (600 characters for a refit); `models show` names
// the version's ID.
func TestModelsListFitsAScreen(t *testing.T) {
	r := newRegistryEnv(t)
	ctx := t.Context()
	v1 := r.fit(t, "../../testdata/mscv2/MSCV2.mat", "dummy", true)
	blob, meta, err := r.reg.Get(ctx, v1.Version)
	if err != nil {
		t.Fatal(err)
	}
	meta.Version, meta.ID, meta.Metrics = "", "", map[string]float64{"heldout_hamming_loss": 0.0845, "train_bags": 165}
	for _, k := range []string{"average_precision", "bag_accuracy", "coverage", "one_error", "ranking_loss", "instance_accuracy", "macro_f1", "micro_f1"} {
		meta.Metrics["heldout_"+k] = 0.5
		meta.Metrics["heldout_current_"+k] = 0.4
	}
	if _, err := r.reg.Put(ctx, blob, meta); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runCmd(ctx, append([]string{"models", "list"}, r.flags...)...)
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if len(line) > 200 {
			t.Errorf("list row of %d characters:\n%s", len(line), line)
		}
	}
	if code != 0 || !strings.Contains(stdout, "heldout_hamming_loss=0.0845") || !strings.Contains(stdout, "(+15: models show)") {
		t.Errorf("list: exit %d:\n%s", code, stdout)
	}
	_, stdout, _ = runCmd(ctx, append([]string{"models", "show", v1.Version}, r.flags...)...)
	if !strings.Contains(stdout, "id               "+v1.ID) {
		t.Errorf("show does not name the ID %s:\n%s", v1.ID, stdout)
	}
}
