// Package wire is the pipeline's wire format: the messages on the topics
// (BagMessage, AnnotationMessage, DeadLetter) with their header keys and
// topic names, the strict decoding and validation of a bag against the
// embedded JSON Schemas and the bag invariants (Validator), the
// classification of input errors into dead-letter reasons (Reason,
// RejectError, ReasonOf), and the encoding of dead-letter records. It
// depends on no model code and on no Kafka client.
package wire
