package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// TestDecodeBagSizeLimitBoundary: a message of exactly maxBytes passes, one
// byte more is oversize. Catches the limit compared with >= instead of >.
func TestDecodeBagSizeLimitBoundary(t *testing.T) {
	raw := []byte(`{"schema_version":1,"id":"ok","dim":2,"instances":[[1,2]]}`)
	v, err := NewValidator(len(raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.DecodeBag(raw); err != nil {
		t.Errorf("a message of exactly the limit: %v", err)
	}
	longer := append(bytes.Clone(raw[:len(raw)-1]), ' ', '}')
	_, err = v.DecodeBag(longer)
	if r, _ := ReasonOf(err); r != ReasonOversize {
		t.Errorf("a message one byte over the limit: %v, want oversize", err)
	}
	// The dead-letter text names the reason first.
	if err == nil || !strings.HasPrefix(err.Error(), string(ReasonOversize)+": message of ") {
		t.Errorf("error text %q, want it to start with the reason", err)
	}
}

// TestDecodeBagLabelEdgeCases: labels without a class vocabulary are
// refused with the labels reason (the schema requires "classes" with
// "labels", but an empty vocabulary passes it); an empty label set with a
// vocabulary is a labeled negative bag; an empty instance_labels array
// decodes as none. Catches the vocabulary check deleted or inverted, and
// instance_labels [] kept as a non-nil empty slice (len > 0 read as >= 0),
// which would make a round trip unequal.
func TestDecodeBagLabelEdgeCases(t *testing.T) {
	v, err := NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.DecodeBag([]byte(`{"schema_version":1,"id":"x","dim":1,"instances":[[1]],"labels":[],"classes":[]}`))
	if r, _ := ReasonOf(err); r != ReasonLabels || !strings.Contains(err.Error(), "labels without a class vocabulary") {
		t.Errorf("labels with an empty vocabulary: %v, want %s (labels without a class vocabulary)", err, ReasonLabels)
	}
	m, err := v.DecodeBag([]byte(`{"schema_version":1,"id":"x","dim":1,"instances":[[1]],"labels":[],"classes":["a"],"instance_labels":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Labels == nil || len(m.Labels) != 0 {
		t.Errorf("labels [] decoded as %#v, want a labeled bag with no class", m.Labels)
	}
	if m.InstanceLabels != nil {
		t.Errorf("instance_labels [] decoded as %#v, want nil", m.InstanceLabels)
	}
	if !reflect.DeepEqual(m.Bag(), &mil.Bag{ID: "x", Instances: [][]float64{{1}}, Labels: []int{}}) {
		t.Errorf("decoded bag %+v", m.Bag())
	}
}

// TestSurrogateBoundaries: escaped UTF-16 surrogates at the edges of the
// high (D800–DBFF) and low (DC00–DFFF) ranges. A pair decodes; a lone half,
// or a high half followed by a non-surrogate escape, is ambiguous (parsers
// disagree on it) and refused; the code points just outside the ranges are
// ordinary characters. Catches every off-by-one in the range checks.
func TestSurrogateBoundaries(t *testing.T) {
	v, err := NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id        string // JSON string body
		ambiguous bool
		want      string
	}{
		{`\ud800\udc00`, false, "\U00010000"},
		{`\udbff\udfff`, false, "\U0010FFFF"},
		{`x\ud7ff`, false, "x\ud7ff"},
		{`x\ue000`, false, "x\ue000"},
		{`\ud800\ue000`, true, ""},
		{`\udbff\udbff`, true, ""},
		{`\ud800\ud7ff`, true, ""},
		{`\ud800`, true, ""},
		{`x\udbff`, true, ""},
		{`x\udc00`, true, ""},
		{`x\udfff`, true, ""},
		{`x\udc00\ud800`, true, ""},
		{`x\udc00\udc00`, true, ""}, // DC00 is a low half, never a high one
	} {
		raw := `{"schema_version":1,"id":"` + tc.id + `","dim":1,"instances":[[1]]}`
		m, err := v.DecodeBag([]byte(raw))
		switch {
		case tc.ambiguous && !errors.Is(err, ErrAmbiguous):
			t.Errorf("id %s: err = %v, want ErrAmbiguous", tc.id, err)
		case !tc.ambiguous && (err != nil || m.ID != tc.want):
			t.Errorf("id %s: %v, %v; want id %q", tc.id, m, err, tc.want)
		}
	}
}

// TestInvalidUTF8Position: the ambiguity error names the byte where the
// invalid UTF-8 starts, past valid multi-byte characters and past a
// literal U+FFFD (valid UTF-8 that decodes to utf8.RuneError, with a width
// of 3). Catches the scan stopping at the first rune of any kind, or at a
// literal U+FFFD, or never (the position then is 0 or the end).
func TestInvalidUTF8Position(t *testing.T) {
	v, err := NewValidator(0)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "{\"schema_version\":1,\"id\":\"a\u00e9\ufffdb"
	raw := prefix + "\xffc\",\"dim\":1,\"instances\":[[1]]}"
	_, err = v.DecodeBag([]byte(raw))
	want := fmt.Sprintf("invalid UTF-8 at byte %d", len(prefix))
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want ErrAmbiguous with %q", err, want)
	}
}
