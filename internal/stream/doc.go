// Package stream is the streaming annotation pipeline: the message types on
// the topics and their validation, the publisher used by ingest, the
// annotator (a consumer-group member serving the registry's current model)
// and the retrainer (which refits on a window of weakly labeled bags and
// promotes better models). It depends only on the models contract
// (Registry.Decode, Encode, Kind.Fit, Model.Annotate), so every model kind
// plugs in unchanged; models that also implement FeatureMapper get their
// per-instance vectors cached in Redis.
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
// The annotator commits a batch's offsets only after every output of the
// batch (annotation or dead letter) is acknowledged: at least once. A crash
// re-delivers the uncommitted batch; outputs keyed by bag id make the
// duplicates idempotent downstream. A graceful stop (SIGTERM) finishes,
// writes and commits the batch in flight, so its successor redoes nothing.
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
// calls with back-off.
package stream
