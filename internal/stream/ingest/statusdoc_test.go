package ingest

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/schemas"
)

// TestStatusCodesDocumentedAsTheSchema: the status codes of POST /bags
// that docs/security.md's table lists are those the response schema's
// description names, no more, no fewer (a client follows one or the
// other: they must agree).
func TestStatusCodesDocumentedAsTheSchema(t *testing.T) {
	raw, err := schemas.Raw("ingest-response.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Description string `json:"description"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`\b[2-5][0-9][0-9]\b`)
	fromSchema := slices.Compact(slices.Sorted(slices.Values(code.FindAllString(s.Description, -1))))
	doc, err := os.ReadFile("../../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	var fromDoc []string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "| status |"):
			in = true
		case in && !strings.HasPrefix(line, "|"):
			in = false
		case in:
			first := strings.SplitN(line, "|", 3)[1]
			fromDoc = append(fromDoc, code.FindAllString(first, -1)...)
		}
	}
	fromDoc = slices.Compact(slices.Sorted(slices.Values(fromDoc)))
	if len(fromDoc) == 0 || !slices.Equal(fromDoc, fromSchema) {
		t.Fatalf("docs/security.md's table lists %q, the schema %q", fromDoc, fromSchema)
	}
	t.Logf("status codes %q in both", fromDoc)
}
