// Package svm holds a binary support vector machine with a Gaussian (RBF)
// kernel, trained by sequential minimal optimisation on the dual, plus the
// helpers the multi-label models need: one-vs-rest training over a label
// vocabulary and a cross-validated grid search of C and gamma.
//
// The solver follows Fan, Chen and Lin (JMLR 2005), the algorithm of LIBSVM:
// the dual
//
//	min_a  ½ aᵀQa − eᵀa   s.t.  0 ≤ a_i ≤ C,  yᵀa = 0,   Q_ij = y_i y_j K(x_i, x_j)
//
// is solved two variables at a time, the pair chosen by second-order working
// set selection (WSS 2), which converges in far fewer iterations than the
// maximal-violating-pair rule on the badly scaled kernels a grid search
// visits. The stopping rule is the usual one: the maximal KKT violation
// m(a) − M(a) falls below Tol.
//
// The Gram matrix is computed once per training set and kept in memory
// (n² float64s): the data sets this project trains on have a few thousand
// examples at most, and the grid search reuses one Gram matrix for every C
// and every cross-validation fold.
//
// Each iteration makes two passes over the examples (the gradient update
// with the next i's search, and the j search); on amd64 with AVX2 they run
// four examples at a time (pass_amd64.s) and take the same decisions on the
// same floats as the Go loops in pass.go, which the tests hold them to bit
// for bit and which run elsewhere (or with -tags purego).
package svm
