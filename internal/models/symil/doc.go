// Package symil implements SyMIL, the min-max latent SVM of Durand, Thome
// and Cord, "SyMIL: MinMax Latent SVM for Weakly Labeled Data", IEEE TNNLS
// 29(12), 2018, for binary multi-instance classification, and uses it one
// class against the rest on multi-instance multi-label bags.
//
// A bag is scored by its highest (M) and lowest (m) instance scores and is
// positive iff M + m ≥ 0: the instance farthest from the hyperplane decides
// (eq. 1). Training minimises eq. 3,
//
//	½‖w‖² + C/n⁺ Σ_{pos} [1 − M_i]₊ + C/n⁻ Σ_{neg} [1 + m_i]₊ + (Cλ/n) Σ_i [1 − y_i(M_i + m_i)]₊,
//
// a difference of convex functions, by CCCP (Alg. 1) from random latent
// instances, keeping the best of several restarts by objective value:
//
//   - kernel=linear: each convex subproblem by stochastic sub-gradient
//     descent in the primal (Alg. 2, Appendix B);
//   - kernel=rbf: each convex subproblem by the one-slack cutting-plane
//     method in the dual (Alg. 3), the QP of each step solved exactly by
//     package qp on a precomputed Gram matrix.
//   - solver=dcd (either kernel): each convex subproblem by block
//     coordinate ascent on its instance-level dual, stopped by a duality
//     gap certificate (dcd.go). It is the cross-check of spec pitfall 7:
//     it tells whether an inexact subproblem solution is what separates
//     our accuracy from the paper's (it is not; see this package's README.md).
//
// The typos of the paper are corrected as in the implementation notes
// (specs/symil.md §9): h⁺ is an argmax, ∇v carries C/n, g_cave of a negative
// bag is −(n/n⁻+λ)Ψ(b,h⁻) (checked: the linear-kernel dual and the primal
// SGD reach the same optimum for fixed latent variables), the CCCP stopping
// test uses the objective decrease, and the cutting planes include the
// tangent-bound constant κ_i = n/n^± so that the slack bound ξ ≥ 0 does not
// change the problem.
//
// # Parameters
//
// FitOptions.Params keys (unknown keys are rejected) are declared once,
// with their types, ranges, defaults and docs, by params in symil.go
// (`retrainer eval --list-params symil` and docs/models.md show them).
// What the declaration's one-line docs leave out:
//
//   - kernel=auto is rbf on dense data up to gram_limit training
//     instances, linear otherwise (sparse data, larger sets, or solver=sgd
//     given); C and cv_repeats then default by the chosen kernel (see
//     Config.resolve and defaultC).
//   - gamma=meandist reads the paper's words literally: γ is the mean
//     pairwise distance itself.
//   - scale=auto under rbf is zscore; under linear it chooses unit or
//     zscore on the training bags: the inner CV of λ runs under both, and
//     unit is kept unless zscore's held-out hits, averaged per bag over the
//     cv_repeats splits, beat it by more than one standard error of the
//     paired per-bag difference (the one-standard-error rule; see
//     chooseScale); the chosen transform keeps the λ it chose. See this
//     package's README.md, "Scaling and C".
//
// # Reconstruction choices
//
// The paper leaves these open (spec §9); the choices and why:
//
//   - Features are transformed: z-scores over the training instances for
//     the RBF kernel; for the linear kernel unit norms or z-scores, chosen
//     on the training bags (scale=auto). The benchmark features range over
//     very different scales (Musk: raw integers in the hundreds) and
//     C = 10⁴ was tuned for some scaling; a transform makes C and γ
//     comparable across data sets.
//   - Kernel: the paper reports both; the default is RBF where its Gram
//     matrix fits (the better of the two under honest λ selection on
//     Musk1, Elephant and Fox: docs/reproductions/symil-musk.md), linear
//     on sparse or large data.
//   - Bias: the paper's model has none, but with the rule sign(M + m) an
//     offset shifts both scores and matters. A constant feature 1 is appended
//     (a regularised bias) for the linear kernel; the RBF kernel becomes
//     k + 1, the same construction in feature space. bias=false removes it.
//   - γ = 1 / mean‖x − x'‖² over pairs of training instances: "the mean
//     pairwise instance distance", read as a scale for the squared distance
//     in exp(−γ‖x − x'‖²) so that a typical pair has kernel value e⁻¹.
//   - SGD: the stochastic gradient of ½‖w‖² + (C/n)Σ q_i for bag i is
//     w + C·∂q_i; the step is η_τ = 1/(τ + τ₀) (Pegasos for a 1-strongly
//     convex objective) with τ₀ = C·mean‖x‖², so the first steps move an
//     instance score by O(1) rather than by C; iterates of the second half
//     of each subproblem's epochs are averaged, and each subproblem starts
//     from the previous solution.
//   - Restarts: the fit with the lowest P(w) of eq. 3 is kept.
//   - λ = cv: for each class, stratified cv_folds-fold CV on the training
//     bags over lambda_grid (one restart per candidate fit), repeated over
//     cv_repeats independent splits (the first is the split of a single CV,
//     the others seeded from it), best mean bag accuracy over all (repeat,
//     fold) cells, the smaller λ on ties; then a refit on all training bags
//     with every restart.
//
// # Multi-label use
//
// One binary SyMIL per class, a bag being positive for class c when c is in
// its label set. The bag score of class c is the paper's f_w(b) (M if
// M + m ≥ 0, else m) and c is predicted when M + m ≥ 0. Each instance is
// labeled with the class it scores highest among the predicted labels (the
// bag's own labels in transductive mode), or mil.Unlabeled when there is
// none. Binary MIL data (Classes = ["positive"], negative bags with an empty
// label set) are the one-class case.
package symil
