// Package schemas holds the JSON Schemas of the messages on the pipeline's
// topics (bag, annotation, dead-letter record), embedded in the binaries so
// the files published are the ones the tests hold the services to. The
// services validate bags with a typed decoder (wire.Validator); the
// generic JSON Schema validator compiling these files is the reference in
// the tests (internal/testsupport/schemaref), so no service links it.
package schemas

import "embed"

// Version is the message schema version carried in every message body and
// in the schema-version header.
const Version = 1

//go:embed *.schema.json
var files embed.FS

// Names of the embedded schema files.
const (
	BagFile        = "bag.schema.json"
	AnnotationFile = "annotation.schema.json"
	DeadLetterFile = "deadletter.schema.json"
)

// Raw returns the bytes of an embedded schema file.
func Raw(name string) ([]byte, error) { return files.ReadFile(name) }
