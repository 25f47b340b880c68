// Package mlca is the "mlca" model kind: supervised MLCA (Law, Yu, Cord and
// Xing, CVPR 2016), the Mahalanobis metric learned in closed form from the
// ground-truth instance labels, with centroid and citation-kNN annotation.
// It is setting (a) of Law et al. 2017, an upper bound for the weakly
// supervised "mimlca" like SLR for ORed-LR, and needs a data set with
// instance labels.
//
// The algorithm, the model it produces (shared with "mimlca"), its
// serialized state and its parameters are in package
// internal/metriclearn; this package only names the kind.
//
// # Parameters (models.FitOptions.Params)
//
// Those of metriclearn.ParseConfig (`retrainer eval --list-params mlca`):
//
//	metric=learned|euclidean  euclidean: identity metric, same centroids and
//	                          citation-kNN (the baseline of the papers)
//	kernel=linear|rbf|chi2    rbf exp(-γ‖a−b‖²); chi2 exp(-γ D_χ²) on
//	                          ℓ1-normalized non-negative vectors
//	gamma=0                   0 = 1 / mean pairwise distance (sampled)
//	landmarks=500             Nyström landmarks; 0 = all training instances
//	center=true               subtract the training feature mean first
//	rule=centroid|alpha       eq. 15 or eq. 16
//	alpha=0.25                α of eq. 16 (not used in training)
//	refs=20 citers=20         citation-kNN r and c
//	hausdorff=min|max         bag distance of citation-kNN
package mlca
