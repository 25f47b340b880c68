package schemaref

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestValidateAnnotationAndDeadLetterRefuseSchemaViolations: both checks
// must refuse well-formed JSON that breaks the schema and malformed JSON,
// and pass a valid record. Catches the error check in validate inverted
// (which returns nil for every document that parses) and the schemas
// swapped between the two.
func TestValidateAnnotationAndDeadLetterRefuseSchemaViolations(t *testing.T) {
	v := MustNew(0)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ann, _ := json.Marshal(wire.AnnotationMessage{SchemaVersion: 1, BagID: "b", Model: "orlr", ModelVersion: "v1", Mode: "inductive",
		Classes: []string{"a"}, BagLabels: []int{0}, BagScores: []float64{0.9}, AnnotatedAt: now})
	dl := wire.NewDeadLetter(wire.StageIngest, wire.ReasonSchema, errors.New("bad"), "k", "t", 0, 3, []byte("x")).Encode(0)
	checks := []struct {
		name  string
		check func([]byte) error
		valid []byte
	}{
		{"annotation", v.ValidateAnnotation, ann},
		{"dead letter", v.ValidateDeadLetter, dl},
	}
	for _, c := range checks {
		if err := c.check(c.valid); err != nil {
			t.Errorf("%s: valid record refused: %v", c.name, err)
		}
		for _, bad := range []string{`{}`, `{"schema_version":2}`, `[]`, `"x"`} {
			err := c.check([]byte(bad))
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%s: schema-invalid %s: err = %v, want a schema violation", c.name, bad, err)
			}
		}
		if err := c.check([]byte(`{"schema_version":1,`)); err == nil {
			t.Errorf("%s: malformed JSON accepted", c.name)
		}
	}
	// Each record is refused by the other's schema.
	if v.ValidateAnnotation(dl) == nil || v.ValidateDeadLetter(ann) == nil {
		t.Error("an annotation and a dead letter validate against each other's schema")
	}
}
