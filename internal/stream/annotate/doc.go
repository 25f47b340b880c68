// Package annotate is the annotator: a consumer-group member that annotates
// bags with the registry's current model (hot-swapped between batches),
// commits offsets only after its outputs are acknowledged, and caches the
// per-instance work of models that implement models.FeatureMapper in Redis behind
// a circuit breaker. Command is the annotator command; New builds the same
// service for the demo.
package annotate
