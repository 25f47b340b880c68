package models

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
)

func TestParseParams(t *testing.T) {
	tests := []struct {
		in      []string
		want    Params
		wantErr string
	}{
		{nil, Params{}, ""},
		{[]string{"a=1", "b=x=y", "c="}, Params{"a": "1", "b": "x=y", "c": ""}, ""},
		{[]string{"a=1", "a=2"}, Params{"a": "2"}, ""}, // the last one wins
		{[]string{"novalue"}, nil, `--param "novalue": want key=value`},
		{[]string{"=1"}, nil, `--param "=1": want key=value`},
	}
	for _, tc := range tests {
		got, err := ParseParams(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseParams(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
		case err != nil || !maps.Equal(got, tc.want):
			t.Errorf("ParseParams(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func testSpecs() []ParamSpec {
	return []ParamSpec{
		{Name: "l2", Type: ParamFloat, Default: "0", Doc: "weight"},
		{Name: "iters", Type: ParamInt, Default: "50", Doc: "iterations"},
		{Name: "bias", Type: ParamBool, Default: "true", Doc: "bias"},
		{Name: "kernel", Type: ParamEnum, Values: []string{"linear", "rbf"}, Default: "linear", Doc: "kernel"},
		{Name: "gamma", Type: ParamString, Default: "auto", Doc: "width"},
	}
}

func TestCheckParams(t *testing.T) {
	tests := []struct {
		p    Params
		want string // "" for accepted
	}{
		{Params{}, ""},
		{Params{"l2": "1e-3", "iters": "7", "bias": "false", "kernel": "rbf", "gamma": "anything"}, ""},
		{Params{"itres": "7"}, `unknown param "itres" (valid: bias, gamma, iters, kernel, l2)`},
		{Params{"l2": "x"}, `param l2="x": want a number`},
		{Params{"iters": "1.5"}, `param iters="1.5": want an integer`},
		{Params{"bias": "maybe"}, `param bias="maybe": want true or false`},
		{Params{"kernel": "poly"}, `param kernel="poly": want one of linear, rbf`},
		// Several bad keys: the first in key order is reported, every run.
		{Params{"zz": "1", "aa": "1"}, `unknown param "aa"`},
	}
	for _, tc := range tests {
		err := CheckParams(testSpecs(), tc.p)
		if tc.want == "" {
			if err != nil {
				t.Errorf("CheckParams(%v) = %v, want nil", tc.p, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckParams(%v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	if err := CheckParams([]ParamSpec{}, Params{"x": "1"}); !errors.Is(err, ErrUnknownParam) || !strings.Contains(err.Error(), "(valid: none)") {
		t.Errorf("no declared params: %v", err)
	}
}

func TestValidateSpecs(t *testing.T) {
	if err := ValidateSpecs(testSpecs()); err != nil {
		t.Fatal(err)
	}
	bad := map[string]ParamSpec{
		"no name":         {Type: ParamInt, Doc: "d"},
		"unknown type":    {Name: "a", Type: "complex", Doc: "d"},
		"enum, no values": {Name: "a", Type: ParamEnum, Doc: "d"},
		"values on int":   {Name: "a", Type: ParamInt, Values: []string{"1"}, Doc: "d"},
		"bad default":     {Name: "a", Type: ParamInt, Default: "x", Doc: "d"},
		"enum default":    {Name: "a", Type: ParamEnum, Values: []string{"x", "y"}, Default: "y", Doc: "d"},
		"no doc":          {Name: "a", Type: ParamInt},
		"two-line doc":    {Name: "a", Type: ParamInt, Doc: "d\ne"},
		"key with =":      {Name: "a=b", Type: ParamInt, Doc: "d"},
	}
	for name, s := range bad {
		if err := ValidateSpecs([]ParamSpec{s}); err == nil {
			t.Errorf("%s: %+v accepted", name, s)
		}
	}
	dup := append(testSpecs(), ParamSpec{Name: "l2", Type: ParamFloat, Doc: "again"})
	if err := ValidateSpecs(dup); err == nil {
		t.Error("a name declared twice accepted")
	}
}

// TestRegistryChecksParams checks the Fit of a kind from a Registry rejects
// an undeclared key before the kind's own Fit runs, while the kind value
// itself is untouched and a kind declaring nothing stays unchecked.
func TestRegistryChecksParams(t *testing.T) {
	fits := 0
	fit := func(context.Context, *mil.Dataset, FitOptions) (Model, error) {
		fits++
		return &constModel{}, nil
	}
	declared := Kind{Name: "declared", Params: testSpecs(), Fit: fit}
	open := Kind{Name: "open", Fit: fit}
	reg := NewRegistry(declared, open)
	k, _ := reg.Lookup("declared")
	_, err := k.Fit(context.Background(), &mil.Dataset{}, FitOptions{Params: Params{"itres": "1"}})
	if !errors.Is(err, ErrUnknownParam) || !strings.HasPrefix(err.Error(), `declared: unknown param "itres" (valid: `) || fits != 0 {
		t.Fatalf("registry Fit with an unknown key: %v after %d fits", err, fits)
	}
	if _, err := k.Fit(context.Background(), &mil.Dataset{}, FitOptions{Params: Params{"iters": "3"}}); err != nil || fits != 1 {
		t.Fatalf("registry Fit with a declared key: %v after %d fits", err, fits)
	}
	o, _ := reg.Lookup("open")
	if _, err := o.Fit(context.Background(), &mil.Dataset{}, FitOptions{Params: Params{"anything": "1"}}); err != nil || fits != 2 {
		t.Fatalf("kind without declarations: %v after %d fits", err, fits)
	}
	if err := (Kind{Name: "none", Params: []ParamSpec{}}).CheckParams(Params{"x": "1"}); err == nil {
		t.Error("a kind declaring no parameters accepted one")
	}
}
