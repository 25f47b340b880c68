// Package retrain is the retrainer: it follows the training topic into a
// bounded window (rebuilt from the topic on restart), refits a candidate,
// compares it with the current model on a held-out slice, stores it and
// promotes it when it is not worse. ServeCommand and FitCommand are the
// retrainer's serve and fit subcommands; NewServe builds the serve service
// for the demo.
package retrain
