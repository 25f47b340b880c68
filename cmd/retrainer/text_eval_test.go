package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEvalDocumentManifest runs eval on testdata's twenty documents: slr
// fitted on the ground-truth passages' own labels and annotating them
// knowing the bag labels labels every passage right; the service's
// windows give a report with char_accuracy beside instance_accuracy; bad
// passage settings are usage errors.
func TestEvalDocumentManifest(t *testing.T) {
	const manifest = "../../testdata/text_dev_sample/docs.jsonl"
	code, stdout, stderr := runSLR("eval", "--data", manifest, "--model", "slr", "--mode", "transductive", "--regions", "gt",
		"--dim", "4096", "--param", "iters=200", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Model            string `json:"model"`
		Instances        int    `json:"instances"`
		InstanceAccuracy struct {
			Mean float64 `json:"mean"`
		} `json:"instance_accuracy"`
		CharAccuracy *struct {
			Mean float64 `json:"mean"`
		} `json:"char_accuracy"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	// 20 documents, 71 ground-truth passages; the IDF wrapper names the
	// kind.
	if rep.Model != "slr+tfidf" || rep.Instances != 71 || rep.InstanceAccuracy.Mean != 1 || rep.CharAccuracy == nil || rep.CharAccuracy.Mean != 1 {
		t.Fatalf("report %s", stdout)
	}
	code, stdout, stderr = runSLR("eval", "--data", manifest, "--model", "inherit+slr", "--folds", "2", "--dim", "1024", "--param", "iters=50")
	if code != 0 || !strings.Contains(stdout, "inherit+slr+tfidf") || !strings.Contains(stdout, "char_accuracy") {
		t.Fatalf("inherit+slr: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, bad := range [][]string{{"--passages", "chapters"}, {"--regions", "watershed"}, {"--dim", "0"}, {"--split", "paper"}} {
		args := append([]string{"eval", "--data", manifest, "--model", "slr"}, bad...)
		if code, _, stderr := runSLR(args...); code != 2 || !strings.Contains(stderr, bad[0][2:]) {
			t.Fatalf("%v: exit %d: %s", bad, code, stderr)
		}
	}
}
