// Package stream is the streaming annotation pipeline. It holds no code:
// its subpackages do, one responsibility each, so that each command links
// only what it runs.
//
//	wire       the messages on the topics (BagMessage, AnnotationMessage,
//	           DeadLetter, Reason), strict decoding and validation against
//	           schemas/, dead-letter records
//	kafkaio    Kafka plumbing: producer settings and acknowledged writes,
//	           topic creation, message headers (schema version, W3C trace
//	           context), the observer's tail of a topic, kafka-go logging
//	admission  the checks a bag must pass for a model kind (dimension,
//	           vocabulary, label cap, finite values), shared by the
//	           annotator and the retrainer, which both dead-letter a bag
//	           that fails them
//	sample     deterministic choice of bags by id (label fraction, held-out
//	           slice)
//	ingest     the publisher, and the ingest command (dataset files, JSON
//	           lines, POST /bags)
//	annotate   the annotator (a consumer-group member serving the
//	           registry's current model, with the feature cache), and the
//	           annotator command
//	retrain    the retrainer (refit on a window of weakly labeled bags,
//	           promote the better model), and the retrainer's serve and fit
//	           subcommands
//	service    what the services share: Env, observability, the Kafka and
//	           telemetry flags, start-up, and one lifecycle (Run) for the
//	           work and the HTTP listeners; service/redisflag holds the
//	           Redis flags of annotate and retrain
//
// The pipeline depends only on the models contract (Registry.Decode,
// Encode, Kind.Fit, Model.Annotate), so every model kind plugs in
// unchanged; models that also implement models.FeatureMapper get their
// per-instance vectors cached in Redis. The embedded broker and Redis used
// by the demo and the tests are in internal/embedded, the test helpers in
// internal/testsupport; no package here imports them outside its tests.
//
// # Topics and messages
//
//	bags          BagMessage, key = bag id        ingest -> annotators
//	bags-train    BagMessage with labels          ingest -> retrainer
//	annotations   AnnotationMessage, key = bag id annotators -> consumers
//	dead-letters  DeadLetter (reason, original    ingest, annotators -> operators
//	              bytes, topic/partition/offset)
//
// Bodies are JSON validated against schemas/ (embedded); headers carry the
// W3C trace context and the schema version. Producers wait for all in-sync
// replicas and partition by key.
//
// # Delivery
//
// The annotator keeps several batches in flight and commits, periodically,
// an offset only once the outputs (annotations or dead letters) of every
// message up to it are acknowledged: at least once. A crash re-delivers
// what is not committed; outputs keyed by bag id make the duplicates
// idempotent downstream. A graceful stop (SIGTERM) finishes, writes and
// commits the batches in flight, so its successor redoes nothing.
// A model swap takes effect between batches: every bag is annotated by
// exactly one model version.
//
// # Failure
//
// Input faults (malformed JSON, schema violations, NaN/Inf, wrong dimension,
// empty bag, label set too large for the model, oversize message) go to the
// dead-letter topic with their Reason and the stream goes on. A Redis outage
// leaves the annotators serving the model they hold (the feature cache is
// bypassed by a circuit breaker) and makes the retrainer retry its registry
// calls with back-off. A service whose work or HTTP listener fails stops
// with exit code 1 (service.Run, cli.ExitCode).
package stream
