// Package schemas holds the JSON Schemas of the messages on the pipeline's
// topics (bag, annotation, dead-letter record), embedded in the binaries so
// every service validates against the same files that are published.
package schemas

import (
	"bytes"
	"embed"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Version is the message schema version carried in every message body and
// in the schema-version header.
const Version = 1

//go:embed *.schema.json
var files embed.FS

// baseURL is the common prefix of the schemas' $id.
const baseURL = "https://mimlstream.dev/schemas/"

// Names of the embedded schema files.
const (
	BagFile        = "bag.schema.json"
	AnnotationFile = "annotation.schema.json"
	DeadLetterFile = "deadletter.schema.json"
)

// Raw returns the bytes of an embedded schema file.
func Raw(name string) ([]byte, error) { return files.ReadFile(name) }

// Set is the compiled schemas. Compiled schemas are immutable and safe for
// concurrent validation.
type Set struct {
	Bag        *jsonschema.Schema
	Annotation *jsonschema.Schema
	DeadLetter *jsonschema.Schema
}

// Compile compiles the embedded schemas.
func Compile() (*Set, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	compile := func(name string) (*jsonschema.Schema, error) {
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		// Registered under their $id base, so errors name the published
		// schema rather than a path in the working directory.
		url := baseURL + name
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", name, err)
		}
		return s, nil
	}
	var s Set
	var err error
	if s.Bag, err = compile(BagFile); err != nil {
		return nil, err
	}
	if s.Annotation, err = compile(AnnotationFile); err != nil {
		return nil, err
	}
	if s.DeadLetter, err = compile(DeadLetterFile); err != nil {
		return nil, err
	}
	return &s, nil
}
