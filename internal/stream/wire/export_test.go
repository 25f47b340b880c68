package wire

// Exported for the external tests (package wire_test), which import the
// reference validator (internal/testsupport/schemaref) and so cannot be in
// package wire.
const MaxDeadLetterOriginal = maxDeadLetterOriginal
