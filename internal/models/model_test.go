package models

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// constModel is a minimal model for the envelope tests.
type constModel struct {
	meta  Meta
	Label int `json:"label"`
}

func (m *constModel) Meta() Meta { return m.meta }
func (m *constModel) Annotate(_ context.Context, b *mil.Bag, _ Mode) (Annotation, error) {
	return Annotation{BagLabels: []int{m.Label}}, nil
}
func (m *constModel) MarshalState() ([]byte, error) { return json.Marshal(m) }

func constKind() Kind {
	return Kind{
		Name: "const",
		Decode: func(meta Meta, state []byte) (Model, error) {
			m := &constModel{meta: meta}
			if err := json.Unmarshal(state, m); err != nil {
				return nil, err
			}
			return m, nil
		},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	reg := NewRegistry(constKind())
	in := &constModel{meta: Meta{Kind: "const", Classes: []string{"a", "b"}, Dim: 3, Params: Params{"x": "1"}}, Label: 1}
	blob, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := PeekMeta(blob)
	if err != nil || meta.Kind != "const" || meta.Dim != 3 || meta.Params["x"] != "1" {
		t.Fatalf("PeekMeta = %+v, %v", meta, err)
	}
	out, err := reg.Decode(blob)
	if err != nil {
		t.Fatal(err)
	}
	if got := Unwrap(out).(*constModel); got.Label != 1 || len(got.meta.Classes) != 2 {
		t.Fatalf("decoded %+v", got)
	}
}

func TestDecodeRefuses(t *testing.T) {
	reg := NewRegistry(constKind())
	good, err := Encode(&constModel{meta: Meta{Kind: "const"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		blob string
		want string
	}{
		{name: "not json", blob: "xx", want: "envelope"},
		{name: "other format", blob: strings.Replace(string(good), "mimlstream.model", "other", 1), want: "format"},
		{name: "future version", blob: strings.Replace(string(good), `"version":1`, `"version":2`, 1), want: "version 2"},
		{name: "unknown kind", blob: strings.Replace(string(good), `"kind":"const"`, `"kind":"nope"`, 1), want: "unknown model kind"},
		{name: "bad state", blob: strings.Replace(string(good), `"state":{"label":0}`, `"state":{"label":"x"}`, 1), want: "decode const"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reg.Decode([]byte(tc.blob))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestParams(t *testing.T) {
	p := Params{"f": "0.5", "i": "7", "b": "true", "s": "rbf", "bad": "x"}
	if v, err := p.Float("f", 1); err != nil || v != 0.5 {
		t.Errorf("Float = %v, %v", v, err)
	}
	if v, err := p.Float("missing", 1); err != nil || v != 1 {
		t.Errorf("Float default = %v, %v", v, err)
	}
	if v, err := p.Int("i", 0); err != nil || v != 7 {
		t.Errorf("Int = %v, %v", v, err)
	}
	if v, err := p.Bool("b", false); err != nil || !v {
		t.Errorf("Bool = %v, %v", v, err)
	}
	if v := p.String("s", "linear"); v != "rbf" {
		t.Errorf("String = %v", v)
	}
	if _, err := p.Float("bad", 0); err == nil {
		t.Error("Float accepted x")
	}
	if _, err := p.Int("bad", 0); err == nil {
		t.Error("Int accepted x")
	}
	if _, err := p.Bool("bad", false); err == nil {
		t.Error("Bool accepted x")
	}
}

func TestRegistryAndMode(t *testing.T) {
	reg := NewRegistry(constKind(), Kind{Name: "b"})
	if got := strings.Join(reg.Names(), ","); got != "b,const" {
		t.Errorf("Names = %s", got)
	}
	if _, err := reg.Lookup("zzz"); err == nil {
		t.Error("Lookup of unknown kind succeeded")
	}
	for _, s := range []string{"inductive", "transductive"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%s) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("both"); err == nil {
		t.Error("ParseMode accepted both")
	}
	if !errors.Is(ErrLabelSetTooLarge, ErrBadInput) {
		t.Error("ErrLabelSetTooLarge must wrap ErrBadInput so the annotator dead-letters it")
	}
}
