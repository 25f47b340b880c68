// Package deploy holds the deployment manifests of the service: a
// Dockerfile, a docker-compose stack (Kafka in KRaft mode, Redis, an
// OpenTelemetry collector, Jaeger and the three services) and Kubernetes
// manifests under k8s/. It has no code; its test parses every manifest and
// checks each flag and MIMLSTREAM_* variable against the flags the
// commands really define (read from their --help).
package deploy
