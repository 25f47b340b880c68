// Package e2e holds the end-to-end tests of the pipeline: the embedded
// Kafka-protocol broker, the real Redis at 127.0.0.1:6379 (skipped when none
// answers), annotators as subprocesses running the annotator command's code,
// and the ORed-LR model on MSCV2. Run them with
//
//	go test ./internal/e2e/ -v
package e2e
