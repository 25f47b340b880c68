// Package metriclearn holds Mahalanobis metric learning in closed form:
// MLCA, the metric learning for supervised clustering of Law, Yu, Cord and
// Xing (CVPR 2016), its Nyström kernel feature maps, and the metric Model
// (centroid and citation-kNN annotation) that the "mlca" and "mimlca" kinds
// both produce. It sits below the model kinds so that neither imports the
// other: package mlca fits it from instance labels, package mimlca from bag
// labels.
//
// # Closed form and clustering
//
// With rows X and a partition J of them, L = X† J and M = L Lᵀ (eq. 16-17).
// Train computes it in one pass over the rows through the Gram matrix XᵀX
// and a d×d eigendecomposition with a relative cut-off (the pinv of X), so
// the cost is O(nd² + d³): linear in the number of rows, independent of k.
// Cluster is the test-time procedure of the paper (k-means++ with 20
// restarts on the k leading left singular vectors of X_t L, Section 3.4, or
// directly on X_t L); DeltaLoss and RandLoss are its measures. The toy
// experiment of the paper (Tables 2 and 3, generator in package
// internal/testsupport/synth) is TestToyTables.
//
// # Supervised fit
//
// FitSupervised is the supervised setting (a) of Law et al. 2017: the metric
// learned from the ground-truth instance labels, an upper bound for MIMLCA
// like SLR for ORed-LR (kind "mlca", package internal/models/mlca). It needs
// a data set with instance labels.
//
// # Annotation (Model, of kinds "mlca" and "mimlca")
//
// A Model maps an instance x to g(x) = Lᵀ(φ(x) − μ), where φ is the identity
// or a Nyström kernel map and μ the training mean (center=true). Then:
//
//   - instance scores: rule=centroid (eq. 15) gives −‖g(x) − g(z_c)‖², the
//     negative squared distance to the centroid z_c of the training
//     instances of class c; rule=alpha (eq. 16) gives g(x)_c − α‖g(z_c)‖².
//     A class with no training instance scores −MaxFloat64 and is never
//     predicted. The instance label is the best-scored class, among the bag
//     labels in transductive mode.
//   - bag labels and scores: citation-kNN (Wang and Zucker 2000) with the
//     minimal (hausdorff=min) or maximal (hausdorff=max) Hausdorff distance
//     under the metric, refs references and citers citers; see citationKNN
//     for the multi-label vote and the score. In transductive mode the bag
//     labels are the union of the instance labels (the label set is known).
//     With refs=citers=0 the bag labels are that union in both modes and
//     the bag score of a class is its best instance score.
//
// The state (State) stores L (or the landmarks and the composed kernel
// map), the centroids and, for citation-kNN, every training bag projected to
// the k-dim space with its labels and citation radius: n_train × k floats
// plus m_train floats. Citation-kNN goes through an index of the projected
// training instances (bagIndex, a 2-means tree with box and ball bounds,
// built at fit and decode time and not serialized): under the minimal
// Hausdorff distance a query visits only the tree nodes near the query's
// instances, and a fit computes each bag's radius by one bounded index
// search instead of a scan of all m bags. Under the maximal distance both
// still scan every bag (O(m) per query, O(m²) per fit; see kthMax and
// citationKNN for why the bounds did not pay). Results are
// identical to the brute-force scan, ties included (TestCitationIndexMatchesBruteForce).
//
// # Parameters (models.FitOptions.Params, parsed by ParseConfig; ParamSpecs lists them)
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
package metriclearn
