// Package wire is the pipeline's wire format: the messages on the topics
// (BagMessage, AnnotationMessage, DeadLetter) with their header keys and
// topic names, the strict decoding and validation of a bag in one pass by a
// typed decoder that enforces schemas/bag.schema.json and the bag
// invariants (Validator; the generic JSON Schema validator is its reference
// in the tests, internal/testsupport/schemaref), the
// classification of input errors into dead-letter reasons (Reason,
// RejectError, ReasonOf), the encoding of dead-letter records, and an
// opt-in binary encoding of bags and annotations (proto.go, documented by
// schemas/mimlstream.proto) chosen per message by the content-type header,
// with the same checks and reasons as JSON. It depends on no model code and
// on no Kafka client.
package wire
