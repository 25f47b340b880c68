// Package deploy holds the deployment manifests of the service: a
// Dockerfile, a docker-compose stack (Kafka in KRaft mode, Redis, an
// OpenTelemetry collector, Jaeger, the three services and the status
// page), Kubernetes manifests under k8s/ (with a KEDA ScaledObject), a
// Grafana dashboard and Prometheus alert rules. It has no code; its tests
// parse every manifest and check each flag and MIMLSTREAM_* variable
// against the flags the commands really define (read from their --help),
// parse the rules with Prometheus's rule parser, and check every metric the
// dashboard and the rules name against the /metrics of the commands run.
package deploy
