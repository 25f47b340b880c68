package models

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

type toyConfig struct {
	Rate    float64
	Frac    float64
	Steps   int
	On      bool
	Mode    string
	Select  string
	Gamma   float64 // 0: auto
	Unbound float64
	Finite  float64
}

func toyDecls() Decls[toyConfig] {
	return Decls[toyConfig]{
		Float("rate", func(c *toyConfig) *float64 { return &c.Rate }, "a rate").AtLeast(0),
		Float("frac", func(c *toyConfig) *float64 { return &c.Frac }, "a fraction").Above(0).AtMost(1),
		Int("steps", func(c *toyConfig) *int { return &c.Steps }, "steps").AtLeast(1).AtMost(20).Note("memory grows as 2^steps"),
		Bool("on", func(c *toyConfig) *bool { return &c.On }, "a switch"),
		Enum("mode", func(c *toyConfig) *string { return &c.Mode }, []string{"a", "b", "c"}, "a mode"),
		Enum("select", func(c *toyConfig) *string { return &c.Select }, []string{"cv", "none"}, "optional").Optional(),
		String("gamma", func(c *toyConfig, v string) error {
			if v == "auto" {
				c.Gamma = 0
				return nil
			}
			g, err := strconv.ParseFloat(v, 64)
			if err != nil || !(g > 0) {
				return errors.New("gamma: want auto or a positive number")
			}
			c.Gamma = g
			return nil
		}, func(c *toyConfig) string {
			if c.Gamma == 0 {
				return "auto"
			}
			return formatFloat(c.Gamma)
		}, "auto or a number").DefaultVaries(),
		Float("unbound", func(c *toyConfig) *float64 { return &c.Unbound }, "anything"),
		Float("finite", func(c *toyConfig) *float64 { return &c.Finite }, "any finite number").Finite(),
	}
}

func toyDefault() toyConfig { return toyConfig{Rate: 0.5, Frac: 1, Steps: 3, Mode: "a"} }

// TestDeclsSpecs: the specs carry the declared names, types, values and
// docs, each default rendered from the default configuration (none where
// it varies or the enum is optional), each range as declared, and they
// pass ValidateSpecs.
func TestDeclsSpecs(t *testing.T) {
	specs := toyDecls().Specs(toyDefault())
	want := []ParamSpec{
		{Name: "rate", Type: ParamFloat, Default: "0.5", Doc: "a rate", Range: ">= 0"},
		{Name: "frac", Type: ParamFloat, Default: "1", Doc: "a fraction", Range: "in (0,1]"},
		{Name: "steps", Type: ParamInt, Default: "3", Doc: "steps", Range: "in [1,20]"},
		{Name: "on", Type: ParamBool, Default: "false", Doc: "a switch"},
		{Name: "mode", Type: ParamEnum, Values: []string{"a", "b", "c"}, Default: "a", Doc: "a mode"},
		{Name: "select", Type: ParamEnum, Values: []string{"cv", "none"}, Doc: "optional"},
		{Name: "gamma", Type: ParamString, Doc: "auto or a number"},
		{Name: "unbound", Type: ParamFloat, Default: "0", Doc: "anything"},
		{Name: "finite", Type: ParamFloat, Default: "0", Doc: "any finite number", Range: "finite"},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Fatalf("specs:\n%+v\nwant\n%+v", specs, want)
	}
	if err := ValidateSpecs(specs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		i    int
		want string
	}{{0, "float>=0"}, {1, "float(0,1]"}, {2, "int[1,20]"}, {4, "enum(a|b|c)"}} {
		if got := specs[c.i].TypeString(); got != c.want {
			t.Errorf("%s: TypeString %q, want %q", specs[c.i].Name, got, c.want)
		}
	}
}

// TestDeclsBindRender: Bind sets exactly the keys given, parsed as their
// types, refuses an undeclared key (naming the valid ones) and a value of
// the wrong type; Render gives back what Bind read, so Bind(Render(c))
// is c.
func TestDeclsBindRender(t *testing.T) {
	d := toyDecls()
	c := toyDefault()
	if err := d.Bind(Params{"rate": "2.5", "on": "true", "mode": "c", "gamma": "0.25"}, &c); err != nil {
		t.Fatal(err)
	}
	want := toyDefault()
	want.Rate, want.On, want.Mode, want.Gamma = 2.5, true, "c", 0.25
	if c != want {
		t.Fatalf("bound %+v, want %+v", c, want)
	}
	r := d.Render(c)
	if _, ok := r["select"]; ok || len(r) != len(d)-1 {
		t.Errorf("render %v: want every key but the optional select not given", r)
	}
	var back toyConfig
	if err := d.Bind(r, &back); err != nil || back != c {
		t.Errorf("Bind(Render(c)) = %+v, %v; want %+v", back, err, c)
	}
	c.Select = "cv"
	if r := d.Render(c); r["select"] != "cv" {
		t.Errorf("render of a given optional enum: %v", r)
	}

	err := d.Bind(Params{"speed": "1"}, &c)
	if !errors.Is(err, ErrUnknownParam) || !strings.Contains(err.Error(), "finite, frac, gamma, mode, on, rate, select, steps, unbound") {
		t.Errorf("undeclared key: %v", err)
	}
	for _, kv := range [][2]string{{"rate", "fast"}, {"steps", "1.5"}, {"on", "yes please"}, {"mode", "d"}, {"gamma", "-1"}} {
		c := toyDefault()
		if err := d.Bind(Params{kv[0]: kv[1]}, &c); err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: error %v, want one naming the key", kv[0], kv[1], err)
		}
	}
}

// TestDeclsCheck holds the range check to the ranges written out by hand
// on values at, beside and beyond each bound, NaN and the infinities.
func TestDeclsCheck(t *testing.T) {
	d := toyDecls()
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	ref := map[string]func(float64) bool{
		"rate":   func(v float64) bool { return finite(v) && v >= 0 },
		"frac":   func(v float64) bool { return finite(v) && v > 0 && v <= 1 },
		"steps":  func(v float64) bool { return v >= 1 && v <= 20 },
		"finite": finite,
	}
	values := []float64{math.Inf(-1), -1, -1e-300, 0, 1e-300, 0.5, 1, 1 + 1e-15, 2, 20, 21, math.Inf(1), math.NaN()}
	for name, ok := range ref {
		for _, v := range values {
			c := toyDefault()
			switch name {
			case "rate":
				c.Rate = v
			case "frac":
				c.Frac = v
			case "finite":
				c.Finite = v
			case "steps":
				if !finite(v) || v != math.Trunc(v) {
					continue
				}
				c.Steps = int(v)
			}
			err := d.Check("toy", c)
			if (err == nil) != ok(v) {
				t.Errorf("%s=%v: Check error %v, want ok %v", name, v, err, ok(v))
			}
			if err != nil && !strings.HasPrefix(err.Error(), "toy: "+name+"=") {
				t.Errorf("%s=%v: error %q does not start with the kind and the key", name, v, err)
			}
		}
	}
	c := toyDefault()
	c.Steps = 30
	if err := d.Check("toy", c); err == nil || err.Error() != "toy: steps=30 must be in [1,20] (memory grows as 2^steps)" {
		t.Errorf("steps=30: %v", err)
	}
	c = toyDefault()
	c.Mode = "z"
	if err := d.Check("toy", c); err == nil || err.Error() != `toy: mode="z" (want a, b or c)` {
		t.Errorf("mode=z: %v", err)
	}
	c = toyDefault()
	c.Select, c.Unbound = "", math.Inf(1)
	if err := d.Check("toy", c); err != nil {
		t.Errorf("an optional enum not given and an unbounded float: %v", err)
	}
}

// TestDeclsEmbedSetWith: declarations of a shared configuration embedded
// in a kind's bind, check and render through the outer configuration;
// Set leaves keys it does not declare to the kind (and still refuses a
// declared key's bad value), where Bind refuses them; With changes one
// declaration only.
func TestDeclsEmbedSetWith(t *testing.T) {
	type outer struct {
		Shared toyConfig
		Own    int
	}
	shared := Embed(toyDecls(), func(o *outer) *toyConfig { return &o.Shared })
	shared = shared.With("rate", func(d Decl[outer]) Decl[outer] { return d.DefaultVaries().AppendDoc(" (chosen by the kind)") })
	d := append(shared, Int("own", func(o *outer) *int { return &o.Own }, "the kind's own").AtLeast(0))
	def := outer{Shared: toyDefault(), Own: 2}
	specs := d.Specs(def)
	if specs[0].Default != "" || specs[0].Doc != "a rate (chosen by the kind)" || specs[0].Range != ">= 0" || specs[1].Default != "1" || specs[len(specs)-1].Name != "own" {
		t.Errorf("embedded specs: %+v", specs)
	}
	if toyDecls().Specs(toyDefault())[0].Default != "0.5" {
		t.Error("With changed the declarations it was given")
	}
	o := def
	if err := d.Bind(Params{"rate": "3", "own": "5", "mode": "b"}, &o); err != nil || o.Shared.Rate != 3 || o.Own != 5 || o.Shared.Mode != "b" {
		t.Errorf("bind through the embedding: %+v, %v", o, err)
	}
	o.Shared.Frac = 2
	if err := d.Check("k", o); err == nil || !strings.Contains(err.Error(), "frac=2") {
		t.Errorf("check through the embedding: %v", err)
	}
	if r := d.Render(def); r["rate"] != "0.5" || r["own"] != "2" {
		t.Errorf("render through the embedding: %v", r)
	}
	c := toyDefault()
	if err := toyDecls().Set(Params{"rate": "4", "own": "5"}, &c); err != nil || c.Rate != 4 {
		t.Errorf("Set with a key of the kind's: %+v, %v", c, err)
	}
	if err := toyDecls().Set(Params{"mode": "z"}, &c); err == nil {
		t.Error("Set took a value outside the enum")
	}
	if err := toyDecls().Bind(Params{"own": "5"}, &c); !errors.Is(err, ErrUnknownParam) {
		t.Errorf("Bind with an undeclared key: %v", err)
	}
}
