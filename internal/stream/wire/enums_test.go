package wire_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/schemas"
)

// TestEnumerationsHaveOneSource holds the schemas' enumerations of
// dead-letter reasons and stages to wire.Reasons and wire.Stages, the one
// place they are declared. The status page (TestCollectorCountsDeclaredStagesAndReasons
// in internal/status) and the alert rules and dashboard
// (TestDashboardAndRulesNameDeclaredReasons in deploy) are held to the same
// lists.
func TestEnumerationsHaveOneSource(t *testing.T) {
	var reasons []string
	for _, r := range wire.Reasons() {
		reasons = append(reasons, string(r))
	}
	for _, tc := range []struct {
		file, path string
		want       []string
	}{
		{schemas.DeadLetterFile, "properties.reason.enum", reasons},
		{schemas.DeadLetterFile, "properties.stage.enum", wire.Stages()},
		{"ingest-response.schema.json", "properties.rejected.items.properties.reason.enum", reasons},
	} {
		got := schemaEnum(t, tc.file, tc.path)
		if !sameSet(got, tc.want) {
			t.Errorf("%s %s = %q, wire declares %q", tc.file, tc.path, got, tc.want)
		}
	}
	// The lists themselves hold no name twice.
	for _, l := range [][]string{reasons, wire.Stages()} {
		if s := slices.Compact(slices.Sorted(slices.Values(l))); len(s) != len(l) {
			t.Errorf("%q names something twice", l)
		}
	}
}

// schemaEnum returns the enum at a dotted path of an embedded schema file.
func schemaEnum(t *testing.T, file, path string) []string {
	t.Helper()
	raw, err := schemas.Raw(file)
	if err != nil {
		t.Fatal(err)
	}
	var node any
	if err := json.Unmarshal(raw, &node); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("%s: no %s (at %q)", file, path, k)
		}
		node = m[k]
	}
	items, ok := node.([]any)
	if !ok {
		t.Fatalf("%s: %s is %T, not an array", file, path, node)
	}
	out := make([]string, len(items))
	for i, v := range items {
		out[i], _ = v.(string)
	}
	return out
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
