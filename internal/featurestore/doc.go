// Package featurestore keeps the service's models in Redis: an immutable,
// checksummed and optionally signed model registry with
// "current"/"previous" aliases and change notifications (Registry). The
// bounded feature cache beside it is package featurecache (every door may
// link it; this package links the model contract), the connection package
// redisflag.
//
// Every key of a Registry carries the hash tag "{prefix}", so all
// keys of one instance hash to one Redis Cluster slot and the multi-key
// transactions below stay legal on a cluster (featurecache.KeyBase).
package featurestore
