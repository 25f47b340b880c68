package models

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Params are model-specific settings. Accessors return the default when a key
// is absent and an error when a value does not parse.
type Params map[string]string

// Float returns the float value of key, or def.
func (p Params) Float(key string, def float64) (float64, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("param %s=%q: %w", key, s, err)
	}
	return v, nil
}

// Int returns the integer value of key, or def.
func (p Params) Int(key string, def int) (int, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("param %s=%q: %w", key, s, err)
	}
	return v, nil
}

// Bool returns the boolean value of key, or def.
func (p Params) Bool(key string, def bool) (bool, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("param %s=%q: %w", key, s, err)
	}
	return v, nil
}

// String returns the value of key, or def.
func (p Params) String(key, def string) string {
	if s, ok := p[key]; ok {
		return s
	}
	return def
}

// ParamType is the type of a model parameter's value.
type ParamType string

// Parameter types. A value is checked by the parser of its type: float
// (strconv.ParseFloat), int (strconv.Atoi), bool (strconv.ParseBool), enum
// (one of ParamSpec.Values); string takes anything and leaves the check to
// the model (lists, or a number with named special values such as
// gamma=auto).
const (
	ParamFloat  ParamType = "float"
	ParamInt    ParamType = "int"
	ParamBool   ParamType = "bool"
	ParamString ParamType = "string"
	ParamEnum   ParamType = "enum"
)

// ParamSpec declares one parameter of a kind: what `retrainer eval
// --list-params KIND` prints and what Kind.CheckParams checks against. The
// model still checks the range of a value (l2 >= 0) when it parses it.
type ParamSpec struct {
	Name string
	Type ParamType
	// Values lists the accepted values of an enum, the default first.
	Values []string
	// Default is the value used when the key is absent, as it would be
	// written on the command line; "" when it depends on the data or on
	// other parameters, in which case Doc says how.
	Default string
	// Doc is one line saying what the parameter does.
	Doc string
	// Range is a number's declared range (">= 0", "in (0,1]"), checked
	// when the model binds it (Decl.Check); "" when it has none.
	Range string
}

// TypeString renders the type for people: "enum(a|b)" for an enum, the
// range after a number's type with no space ("float(0,1]", "int>=1").
func (s ParamSpec) TypeString() string {
	if s.Type == ParamEnum {
		return "enum(" + strings.Join(s.Values, "|") + ")"
	}
	if s.Range == "finite" {
		return string(s.Type) + "(finite)"
	}
	return string(s.Type) + strings.ReplaceAll(strings.TrimPrefix(s.Range, "in "), " ", "")
}

// Check reports whether v is a value of the parameter's type.
func (s ParamSpec) Check(v string) error {
	var err error
	var want string
	switch s.Type {
	case ParamFloat:
		_, err = strconv.ParseFloat(v, 64)
		want = "a number"
	case ParamInt:
		_, err = strconv.Atoi(v)
		want = "an integer"
	case ParamBool:
		_, err = strconv.ParseBool(v)
		want = "true or false"
	case ParamString:
	case ParamEnum:
		if !slices.Contains(s.Values, v) {
			return fmt.Errorf("param %s=%q: want one of %s", s.Name, v, strings.Join(s.Values, ", "))
		}
	default:
		return fmt.Errorf("param %s: unknown type %q", s.Name, s.Type)
	}
	if err != nil {
		return fmt.Errorf("param %s=%q: want %s: %w", s.Name, v, want, err)
	}
	return nil
}

// ErrUnknownParam marks a parameter key that the kind does not declare.
var ErrUnknownParam = errors.New("unknown param")

// CheckParams checks p against specs: every key must be declared and every
// value must parse as its declared type. The error for an unknown key lists
// the valid ones.
func CheckParams(specs []ParamSpec, p Params) error {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys) // report the same key first on every run
	for _, k := range keys {
		i := slices.IndexFunc(specs, func(s ParamSpec) bool { return s.Name == k })
		if i < 0 {
			return fmt.Errorf("%w %q (valid: %s)", ErrUnknownParam, k, paramNames(specs))
		}
		if err := specs[i].Check(p[k]); err != nil {
			return err
		}
	}
	return nil
}

// paramNames lists the declared names, sorted, or "none".
func paramNames(specs []ParamSpec) string {
	if len(specs) == 0 {
		return "none"
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// ValidateSpecs checks a declaration itself: names present and unique, a
// known type, an enum with values, a default (when given) of its own type,
// and a doc line. It is for tests of the kinds; a bad declaration is a bug.
func ValidateSpecs(specs []ParamSpec) error {
	seen := map[string]bool{}
	for _, s := range specs {
		switch {
		case s.Name == "" || strings.ContainsAny(s.Name, "= \t"):
			return fmt.Errorf("param name %q: want a non-empty key without '=' or spaces", s.Name)
		case !slices.Contains([]ParamType{ParamFloat, ParamInt, ParamBool, ParamString, ParamEnum}, s.Type):
			return fmt.Errorf("param %s: unknown type %q", s.Name, s.Type)
		case seen[s.Name]:
			return fmt.Errorf("param %s declared twice", s.Name)
		case s.Type == ParamEnum && len(s.Values) == 0:
			return fmt.Errorf("param %s: enum without values", s.Name)
		case s.Type != ParamEnum && len(s.Values) > 0:
			return fmt.Errorf("param %s: values on a %s", s.Name, s.Type)
		case s.Doc == "" || strings.Contains(s.Doc, "\n"):
			return fmt.Errorf("param %s: want a one-line doc", s.Name)
		}
		seen[s.Name] = true
		if err := s.Check(s.Default); s.Default != "" && err != nil {
			return fmt.Errorf("default: %w", err)
		}
		if s.Type == ParamEnum && s.Default != "" && s.Default != s.Values[0] {
			return fmt.Errorf("param %s: default %q is not the first value", s.Name, s.Default)
		}
	}
	return nil
}

// ParseParams parses "key=value" strings, as given to --param, into Params.
// A later value of the same key replaces an earlier one.
func ParseParams(kvs []string) (Params, error) {
	p := Params{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--param %q: want key=value", kv)
		}
		p[k] = v
	}
	return p, nil
}

// MarkdownTable renders a kind's parameters as the Markdown table
// docs/models.md shows (catalog's TestParamTablesInDocs holds the page to
// it): name, type with its range or values, default ("-" where it depends
// on the data or on other parameters) and doc.
func MarkdownTable(specs []ParamSpec) string {
	if len(specs) == 0 {
		return "no parameters\n"
	}
	esc := strings.NewReplacer("|", `\|`).Replace
	var b strings.Builder
	b.WriteString("| param | type | default | what it does |\n|---|---|---|---|\n")
	for _, s := range specs {
		def := s.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | %s |\n", s.Name, esc(s.TypeString()), esc(def), esc(s.Doc))
	}
	return b.String()
}
