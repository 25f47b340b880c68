// Package mlca implements MLCA, the closed-form Mahalanobis metric learning
// for supervised clustering of Law, Yu, Cord and Xing (CVPR 2016): with rows
// X and a partition J of them, L = X† J and M = L Lᵀ (eq. 16-17), computed in
// one pass over the rows through the Gram matrix (linear in the number of
// rows), plus test-time clustering (k-means with restarts on the leading
// singular vectors of X_t L, Section 3.4) and the Δ and Rand losses.
package mlca
