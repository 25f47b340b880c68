package models

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Decl declares one parameter of a kind once, Benthos style: its name,
// type, documentation and range, and the field of the kind's configuration
// C it binds to. From a kind's list of them (Decls) come the ParamSpecs
// that Kind.Params, `retrainer eval --list-params` and docs/models.md show
// (their defaults read from the kind's default configuration), the parser
// that sets the given keys on a configuration (Bind), the range check
// (Check) and the rendering recorded as a model's provenance (Render).
// Nothing about a parameter is written twice.
type Decl[C any] struct {
	spec ParamSpec
	// set parses v into c; get renders c's value.
	set func(c *C, v string) error
	get func(c *C) string
	// num returns the bound number, for the range check (nil: not a
	// number).
	num func(c *C) float64
	// lo and hi bound a number (nil: unbounded); open excludes the bound.
	lo, hi         *float64
	loOpen, hiOpen bool
	// finite: the number must be finite, with no bound (a bound implies it).
	finite bool
	// note follows a range error ("memory is 2^max_labels per worker").
	note string
	// noDefault: the default depends on the data or on other parameters
	// (the doc says how), so the spec shows none.
	noDefault bool
	// omitZero: Render leaves the key out while the value is its type's
	// zero ("" for an optional enum not given).
	omitZero bool
	// allowEmpty: "" is a valid value of the enum (not given).
	allowEmpty bool
}

// Decls is a kind's parameter declarations, in the order they are shown.
type Decls[C any] []Decl[C]

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Float declares a float parameter bound to the field field returns.
func Float[C any](name string, field func(*C) *float64, doc string) Decl[C] {
	return Decl[C]{spec: ParamSpec{Name: name, Type: ParamFloat, Doc: doc},
		set: func(c *C, v string) error {
			f, err := Params{name: v}.Float(name, 0)
			*field(c) = f
			return err
		},
		get: func(c *C) string { return formatFloat(*field(c)) },
		num: func(c *C) float64 { return *field(c) }}
}

// Int declares an integer parameter.
func Int[C any](name string, field func(*C) *int, doc string) Decl[C] {
	return Decl[C]{spec: ParamSpec{Name: name, Type: ParamInt, Doc: doc},
		set: func(c *C, v string) error {
			n, err := Params{name: v}.Int(name, 0)
			*field(c) = n
			return err
		},
		get: func(c *C) string { return strconv.Itoa(*field(c)) },
		num: func(c *C) float64 { return float64(*field(c)) }}
}

// Bool declares a boolean parameter.
func Bool[C any](name string, field func(*C) *bool, doc string) Decl[C] {
	return Decl[C]{spec: ParamSpec{Name: name, Type: ParamBool, Doc: doc},
		set: func(c *C, v string) error {
			b, err := Params{name: v}.Bool(name, false)
			*field(c) = b
			return err
		},
		get: func(c *C) string { return strconv.FormatBool(*field(c)) }}
}

// Enum declares a parameter taking one of values (the default first, as
// ParamSpec wants), bound to a field of any string type.
func Enum[C any, S ~string](name string, field func(*C) *S, values []S, doc string) Decl[C] {
	vs := make([]string, len(values))
	for i, v := range values {
		vs[i] = string(v)
	}
	return Decl[C]{spec: ParamSpec{Name: name, Type: ParamEnum, Values: vs, Doc: doc},
		set: func(c *C, v string) error { *field(c) = S(v); return nil },
		get: func(c *C) string { return string(*field(c)) }}
}

// EnumFunc declares an enum whose value the configuration holds in its
// own form (scale=auto as an empty Scaling, say): parse sets the value v
// (one of values, checked before) on c, render writes it back.
func EnumFunc[C any](name string, values []string, parse func(c *C, v string), render func(c *C) string, doc string) Decl[C] {
	return Decl[C]{spec: ParamSpec{Name: name, Type: ParamEnum, Values: values, Doc: doc},
		set: func(c *C, v string) error { parse(c, v); return nil },
		get: render}
}

// String declares a parameter whose value is text the model interprets
// itself (a list, or a number with named special values); parse sets it
// on c, render writes it back.
func String[C any](name string, parse func(c *C, v string) error, render func(c *C) string, doc string) Decl[C] {
	return Decl[C]{spec: ParamSpec{Name: name, Type: ParamString, Doc: doc}, set: parse, get: render}
}

// AtLeast bounds a number below: it must be >= lo (and finite).
func (d Decl[C]) AtLeast(lo float64) Decl[C] { d.lo, d.loOpen = &lo, false; return d }

// Above bounds a number below: it must be > lo (and finite).
func (d Decl[C]) Above(lo float64) Decl[C] { d.lo, d.loOpen = &lo, true; return d }

// AtMost bounds a number above: it must be <= hi.
func (d Decl[C]) AtMost(hi float64) Decl[C] { d.hi, d.hiOpen = &hi, false; return d }

// Below bounds a number above: it must be < hi.
func (d Decl[C]) Below(hi float64) Decl[C] { d.hi, d.hiOpen = &hi, true; return d }

// Finite requires a number to be finite (neither NaN nor infinite) and
// bounds it no further.
func (d Decl[C]) Finite() Decl[C] { d.finite = true; return d }

// Note adds a reason to the range error.
func (d Decl[C]) Note(s string) Decl[C] { d.note = s; return d }

// DefaultVaries marks a parameter whose default depends on the data or on
// other parameters: its spec shows no default, and its doc says how.
func (d Decl[C]) DefaultVaries() Decl[C] { d.noDefault = true; return d }

// Optional marks an enum whose value may be "" (not given): Render leaves
// it out then, and its spec shows no default.
func (d Decl[C]) Optional() Decl[C] {
	d.allowEmpty, d.omitZero, d.noDefault = true, true, true
	return d
}

// AppendDoc adds text to the doc line (a kind's note on a shared
// parameter).
func (d Decl[C]) AppendDoc(s string) Decl[C] { d.spec.Doc += s; return d }

// With returns ds with the declaration named name changed by f.
func (ds Decls[C]) With(name string, f func(Decl[C]) Decl[C]) Decls[C] {
	out := slices.Clone(ds)
	for i, d := range out {
		if d.spec.Name == name {
			out[i] = f(d)
		}
	}
	return out
}

// Embed returns the declarations of an inner configuration I bound to the
// part of O that field returns, so that a kind declares its parameters as
// those of a shared configuration plus its own.
func Embed[O, I any](ds Decls[I], field func(*O) *I) Decls[O] {
	out := make(Decls[O], len(ds))
	for i, d := range ds {
		e := Decl[O]{spec: d.spec, lo: d.lo, hi: d.hi, loOpen: d.loOpen, hiOpen: d.hiOpen, finite: d.finite, note: d.note,
			noDefault: d.noDefault, omitZero: d.omitZero, allowEmpty: d.allowEmpty,
			set: func(o *O, v string) error { return d.set(field(o), v) },
			get: func(o *O) string { return d.get(field(o)) }}
		if d.num != nil {
			e.num = func(o *O) float64 { return d.num(field(o)) }
		}
		out[i] = e
	}
	return out
}

// Name returns the declared key.
func (d Decl[C]) Name() string { return d.spec.Name }

// Specs returns the declarations as ParamSpecs, each default rendered from
// def (the kind's default configuration).
func (ds Decls[C]) Specs(def C) []ParamSpec {
	out := make([]ParamSpec, len(ds))
	for i, d := range ds {
		out[i] = d.spec
		out[i].Range = d.RangeDoc()
		if !d.noDefault {
			out[i].Default = d.get(&def)
		}
	}
	return out
}

// Bind sets on c every parameter p gives, each parsed as its declared
// type, and leaves the others as they are (c's defaults). A key not
// declared is refused with the valid ones listed.
func (ds Decls[C]) Bind(p Params, c *C) error {
	if err := CheckParams(ds.Specs(*c), p); err != nil {
		return err
	}
	return ds.Set(p, c)
}

// Set is Bind for a configuration shared by several kinds (metric
// learning's): it sets the declared keys p gives and ignores the others,
// which the kind's own declarations read and its Bind refuses.
func (ds Decls[C]) Set(p Params, c *C) error {
	for _, d := range ds {
		if v, ok := p[d.spec.Name]; ok {
			if err := d.spec.Check(v); err != nil {
				return err
			}
		}
	}
	for _, d := range ds {
		if v, ok := p[d.spec.Name]; ok {
			if err := d.set(c, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Check returns an error, prefixed with kind, for the first value of c
// outside its declared range or values.
func (ds Decls[C]) Check(kind string, c C) error {
	for _, d := range ds {
		if err := d.check(&c); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	return nil
}

func (d Decl[C]) check(c *C) error {
	if d.spec.Type == ParamEnum {
		v := d.get(c)
		if slices.Contains(d.spec.Values, v) || (v == "" && d.allowEmpty) {
			return nil
		}
		return fmt.Errorf("%s=%q (want %s)", d.spec.Name, v, orList(d.spec.Values))
	}
	if d.num == nil || (d.lo == nil && d.hi == nil && !d.finite) {
		return nil
	}
	v := d.num(c)
	ok := !math.IsNaN(v) && !math.IsInf(v, 0)
	if d.lo != nil {
		ok = ok && (v > *d.lo || (!d.loOpen && v == *d.lo))
	}
	if d.hi != nil {
		ok = ok && (v < *d.hi || (!d.hiOpen && v == *d.hi))
	}
	if ok {
		return nil
	}
	msg := fmt.Sprintf("%s=%s must be %s", d.spec.Name, d.get(c), d.rangeText())
	if d.note != "" {
		msg += " (" + d.note + ")"
	}
	return fmt.Errorf("%s", msg)
}

// rangeText says the declared range: ">= 0", "> 0", "in (0,1]".
func (d Decl[C]) rangeText() string {
	switch {
	case d.lo == nil && d.hi == nil:
		return "finite"
	case d.lo != nil && d.hi != nil:
		l, r := "[", "]"
		if d.loOpen {
			l = "("
		}
		if d.hiOpen {
			r = ")"
		}
		return "in " + l + formatFloat(*d.lo) + "," + formatFloat(*d.hi) + r
	case d.lo != nil && d.loOpen:
		return "> " + formatFloat(*d.lo)
	case d.lo != nil:
		return ">= " + formatFloat(*d.lo)
	case d.hiOpen:
		return "< " + formatFloat(*d.hi)
	default:
		return "<= " + formatFloat(*d.hi)
	}
}

// RangeDoc says a numeric parameter's declared range (">= 0", "in (0,1]"),
// "" when it has none: the docs' tables show it.
func (d Decl[C]) RangeDoc() string {
	if d.lo == nil && d.hi == nil && !d.finite {
		return ""
	}
	return d.rangeText()
}

// orList renders values as "a, b or c".
func orList(vs []string) string {
	if len(vs) <= 1 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// Render returns c's parameters as Params (a model's provenance,
// Meta.Params), every declared key but an optional one not given.
func (ds Decls[C]) Render(c C) Params {
	p := Params{}
	for _, d := range ds {
		v := d.get(&c)
		if d.omitZero && v == "" {
			continue
		}
		p[d.spec.Name] = v
	}
	return p
}
