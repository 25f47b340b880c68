// Package ingest is the entry of the pipeline: the Publisher validates
// bags and publishes them to the annotate topic, the labeled ones that keep
// their labels also to the training topic, and the rejected ones to the
// dead-letter topic. Command is the ingest command (a dataset file, JSON
// lines, or POST /bags); New builds the same service for the demo, and
// PublishBags is the paced publishing both use.
package ingest
