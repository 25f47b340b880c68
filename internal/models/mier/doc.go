// Package mier implements the multi-instance enriched image representation
// of Liu, Wang, Nie and Zhang, "Learning Multi-Instance Enriched Image
// Representations via Non-Greedy Ratio Maximization of the ℓ1-Norm
// Distances" (CVPR 2018; spec ../shared/specs/mier.md), as a bag-level
// model of the registry: kind "mier".
//
// # Method
//
// A projection W (d×r, orthonormal columns) is learned without labels from
// instances by maximising J(W) = ‖WᵀB‖₁ / ‖WᵀE‖₁ (Eq. 4): B holds the
// instances centred on their mean (global scatter, PCA-like), E the
// instances of each K-neighbourhood centred on the neighbourhood mean
// (local scatter). Problem.Fit is the non-greedy Algorithm 3: λ ← J(W),
// then Algorithm 2, a projected subgradient step W ← P(W + tG) with
// G = B sign(BᵀW) − λ E sign(EᵀW) and P the polar factor (SVD), backtracking
// t = β, β², … until J rises. J is non-decreasing (a test). A bag's holistic
// vector x is then projected, y = Wᵀx, and y is fed to 3-NN or to one RBF
// SVM per label (package svm).
//
// # Readings of the ambiguous points (spec §9)
//
//   - Which instances define W (param mode). The text learns W "from the
//     instances of an input image", i.e. one W per bag (perbag). But J is
//     invariant to the order and signs of W's columns, so per-bag
//     coordinates y_g mean different things in different bags; we order
//     columns by the bag's spread along them and sign them so their
//     coordinates sum to ≥ 0, which is the best alignment available without
//     labels. The alternative (shared, the default) learns one W from the
//     pooled training instances — global mean over the pool, neighbourhoods
//     searched within each bag (the images' own local structure, and O(n²)
//     per bag rather than over the pool). Shared is much the better reading;
//     see the table below. mode=none skips the projection (the paper's "SVM" rows on
//     holistic vectors). fiton=holistic fits the shared W on one holistic
//     vector per training bag instead (neighbourhoods over the pool): a
//     reading the text does not support, measured and rejected below.
//   - Holistic vector (param holistic). The public MIML Scene data has only
//     the 9 region vectors (15-d SBN colour features) of each image, so a
//     whole-image vector in the same feature space must be built: the mean
//     of the instances (default; for colour-moment features, the regions'
//     average is what a whole-image descriptor approximates), the
//     coordinate-wise median, or the coordinate-wise max (pooling).
//   - K = min{3, n} counts the instance itself; we use min{3, n−1} other
//     instances. Euclidean distance, ties to the lower index.
//   - r = d/10: max(1, round(d/10)), i.e. 2 for Scene (param r).
//   - Eq. 18's B = [x̄_1 − x̄, …] is a typo for [x_1 − x̄, …]; the
//     denominators of Eqs. 22–23 need |·|; the subgradient is computed in
//     its sign form, never forming the d×d matrices A_g (checked equal to
//     the A_g form in tests).
//   - Degenerate neighbour graph (spec §9.4). If the K-NN graph of the
//     instances is disconnected, directions between components are
//     orthogonal to every column of E but not to B: M(W) → 0 and J → ∞, the
//     maximum does not exist (a test shows J running to 7.6·10³). With
//     guard=true (default) W is restricted to span(E), where M is bounded
//     away from zero (Theorem 1's condition); for a connected graph
//     span(E) = span(B) and nothing changes. If rank(E) < r (a bag of one or
//     two instances, or duplicates) no W is non-degenerate and the fixed
//     random W⁰ is used.
//   - Step and stopping, not given by the paper: β = 0.5; the step is β^m G
//     as printed (normalize=false; normalize=true scales G to ‖W‖ first);
//     each backtracking search starts at the last accepted step over β
//     rather than at β (adaptive; acceptance is unchanged, so monotonicity
//     holds; 8× faster on 400 Scene bags: BenchmarkFitShared, 1.95 s vs
//     16.2 s per fit, final J 1.671 vs 1.666). Stop when J rises by less than
//     tol = 1e-6 relatively, when 40 halvings fail, or after 300 iterations.
//   - Features are standardised (z-scores over the training instances)
//     before everything, since SBN features mix scales and both ℓ1 distances
//     and the RBF kernel depend on them (standardize=false turns it off).
//   - Classifiers. 3-NN: score = fraction of the 3 neighbours carrying the
//     label plus tie-breakers far below 1/3 (proximity, then class prior; the
//     ranking measures rank ties pessimistically), predicted at ≥ 1/2 of
//     the votes. SVM: one-vs-rest RBF C-SVM, predicted when the decision
//     value is > 0, decision values as scores. The paper tunes C and gamma on
//     {10⁻⁵..10⁵}² by inner 5-fold CV (grid=paper, cvfolds=5: 3025 SVM fits
//     per outer fold and label); the default grid=small searches C ∈
//     {0.1, 1, 10, 100} × gamma ∈ {¼, 1, 4, 16}/D̄ (D̄ the mean squared
//     distance between training representations) by 3-fold CV per label,
//     ~50× cheaper, and grid=none uses c and gamma (default 1/D̄) as given.
//   - Empty predictions. Every Scene image has a label; when no label passes
//     its threshold the top-scored one is predicted (top1=true), the
//     T-criterion of Zhou and Zhang's MIMLSVM.
//   - Annotate is the same in inductive and transductive modes (a known bag
//     label would be the answer itself); instance-level fields are nil.
//
// # Results on MIML Scene (2000 bags, 9×15-d instances, 5 labels), 5-fold
//
// MIER_REPRO=1 MIER_CONFIGS='<params>;…' go test -run TestSceneReproduction
// -v -timeout 90m ./internal/models/mier (seed 1; mean ± std over folds;
// standardised features, mean holistic vector, k=3, projection fitted on the
// instances unless said; SVM grid=small unless said):
//
//	params                               Hamming     one-error   coverage    rank loss   avg prec
//	paper Ours (SVM)                     0.175±.004  0.355±.016  0.980±.026  0.174±.007  0.794±.011
//	paper Ours (3NN)                     0.187±.011  0.350±.017  0.995±.012  0.182±.014  0.795±.026
//	paper SVM (holistic)                 0.228±.011  0.374±.011  1.041±.018  0.209±.011  0.695±.021
//	shared svm r=2 (default)             0.238±.013  0.476±.039  1.509±.073  0.304±.024  0.672±.023
//	shared svm r=2 grid=paper cvfolds=5  0.236±.014  0.472±.040  1.538±.089  0.311±.024  0.672±.022
//	shared svm r=2 standardize=false     0.240±.011  0.482±.035  1.498±.083  0.302±.024  0.671±.023
//	shared svm r=2 normalize=true        0.236±.014  0.474±.039  1.501±.071  0.302±.021  0.673±.021
//	shared svm r=2 holistic=max          0.250±.007  0.506±.027  1.602±.065  0.329±.018  0.651±.017
//	shared svm r=2 k=1                   0.234±.012  0.464±.032  1.478±.051  0.298±.018  0.680±.018
//	shared svm r=2 k=5                   0.245±.013  0.497±.040  1.554±.071  0.315±.025  0.659±.025
//	shared svm r=2 fiton=holistic        0.322±.004  0.688±.014  2.045±.046  0.456±.010  0.535±.008
//	shared svm r=4                       0.199±.008  0.376±.019  1.185±.037  0.227±.010  0.747±.011
//	shared svm r=8                       0.187±.003  0.349±.015  1.075±.068  0.198±.013  0.769±.013
//	shared svm r=2 projection=pca        0.333±.006  0.715±.024  2.141±.087  0.476±.016  0.512±.013
//	shared svm r=4 projection=pca        0.296±.009  0.623±.025  1.832±.087  0.402±.026  0.586±.019
//	perbag svm r=2                       0.338±.011  0.727±.017  2.168±.074  0.484±.014  0.504±.012
//	none svm (mean)                      0.177±.003  0.325±.010  0.989±.047  0.176±.008  0.787±.006
//	none svm holistic=median             0.186±.007  0.345±.012  1.023±.041  0.185±.008  0.776±.008
//	none svm holistic=max                0.181±.006  0.331±.016  1.011±.034  0.183±.010  0.781±.010
//	shared knn r=2                       0.258±.005  0.515±.020  1.474±.027  0.306±.008  0.661±.011
//	shared knn r=2 standardize=false     0.265±.006  0.536±.014  1.523±.047  0.318±.007  0.648±.010
//	shared knn r=2 normalize=true        0.263±.006  0.524±.019  1.493±.051  0.311±.008  0.656±.012
//	shared knn r=2 holistic=max          0.271±.009  0.541±.028  1.571±.037  0.330±.013  0.639±.013
//	shared knn r=2 k=1                   0.256±.005  0.512±.019  1.503±.053  0.313±.017  0.659±.012
//	shared knn r=2 k=5                   0.264±.006  0.524±.021  1.477±.064  0.309±.014  0.657±.015
//	shared knn r=2 fiton=holistic        0.331±.005  0.688±.018  1.966±.023  0.437±.011  0.541±.014
//	shared knn r=8                       0.228±.007  0.441±.026  1.254±.040  0.250±.016  0.714±.017
//	perbag knn r=2                       0.348±.007  0.730±.026  2.127±.082  0.475±.026  0.509±.022
//	none knn (mean)                      0.223±.006  0.432±.021  1.232±.047  0.243±.015  0.718±.013
//
// The product's command (its own fold split) agrees:
// go run ./cmd/retrainer eval --data testdata/miml_image_zhou/miml_03_data.arff
// --model mier --folds 5 --seed 1 --json gives Hamming 0.238±.014, one-error
// 0.479, coverage 1.479, rank loss 0.298, AP 0.674 (402 s of training on a
// shared, loaded 2-core machine); with --param mode=none 0.181±.007, 0.334,
// 1.011, 0.182, 0.781 (68 s). Beside it, --model orlr (bag labels as the
// union of instance labels, same folds): 0.270±.007, 0.391, 1.161, 0.215,
// 0.743 (73 s). docs/reproductions/zhou-scenes.md has MIMLCA citation-kNN and
// ORed-LR from that same command, seed and folds (citation-kNN with the
// MIMLCA paper's settings 0.208, AP 0.740; with inner-CV selection and the
// RBF kernel 0.153, AP 0.826).
//
// Readings. Shared is the better reading; per-bag coordinates are barely
// informative (AP 0.50), as the symmetry argument predicts.
// The ℓ1 ratio is far better than PCA at the same r (AP 0.672 vs 0.512 at
// r=2, 0.747 vs 0.586 at r=4), so the local term earns its place. But on
// this data the projection only removes information: quality rises
// monotonically with r up to r=d, where a shared W is a rotation and the
// RBF SVM and 3-NN give exactly the answers of mode none (tested for
// 3-NN). The paper's "Ours (SVM)" numbers are matched here by the SVM on the mean
// holistic vector itself (0.177 / 0.787), not by its r = d/10 = 2
// projection (0.238 / 0.672, close to the paper's own holistic-SVM row).
// The paper's real holistic vectors (whole-image features) are not public;
// the mean of the regions is a much stronger whole-image vector than the
// paper's baseline row suggests theirs was. Among constructions, mean >
// max > median, all within 0.01 AP.
//
// Readings at the paper's r = d/10 = 2, measured (rows above). NONE
// REPRODUCES THE PAPER: the best is 0.234 / AP 0.680 (svm, k=1) against
// 0.175 / 0.794, and the readings differ from each other by at most 0.016
// Hamming and 0.029 AP, except fiton=holistic, which is much worse. So the
// gap of about 0.06 Hamming and 0.11 AP is not explained by any of them.
//   - The paper's SVM tuning, run in full: grid=paper (C and gamma each on
//     {10⁻⁵..10⁵}, 121 pairs, gamma absolute on the standardised
//     representation) chosen per label by inner stratified 5-fold CV
//     (cvfolds=5; CV error rate, as the paper gives no criterion), on every
//     outer fold: 0.236 / 0.672, the same as grid=small (0.238 / 0.672).
//     The tuning is not the gap. Cost: measured first on label 0 of outer
//     fold 1 with 3-fold inner CV, 35 s on one core (the slow pairs are
//     C ≥ 100 with gamma 0.1..100, up to 2.3 s per 3 fits), which put the
//     5-fold version at ~35 min of one core; the run took 1493 s of
//     training, about 30 min of CPU (2 goroutines, on a machine shared
//     with another engineer's test).
//   - standardize=false: 0.240 / 0.671; normalize=true (G scaled to ‖W‖):
//     0.236 / 0.673. Neither matters.
//   - holistic=max: 0.250 / 0.651, worse than the mean (after projection
//     the gap between constructions grows from 0.006 to 0.02 AP).
//   - Neighbourhood K: k=1 0.234 / 0.680, k=3 0.238 / 0.672, k=5
//     0.245 / 0.659; smaller is slightly better, within the fold spread,
//     consistent with the paper's "very stable" in K.
//   - fiton=holistic (W fitted on one holistic vector per training bag,
//     neighbourhoods over the pool, instead of on the pooled instances):
//     0.322 / 0.535 (3-NN 0.331 / 0.541), about as bad as PCA at r=2
//     (0.512): among bag vectors the ℓ1 ratio keeps directions of cluster
//     structure, not the ones that carry the labels. It is also against
//     the text ("learns a projection from the instances"), so it is
//     rejected as a reading.
//
// The 3-NN rows at r=2 tell the same story (0.256..0.271 Hamming, AP
// 0.639..0.659, paper 0.187 / 0.795). What does come near the paper is
// leaving r: r=8 (0.187 / 0.769) or no projection (0.177 / 0.787).
//
// # Parameters (models.Params, --param key=value)
//
// mode (shared|perbag|none), classifier (svm|knn), holistic
// (mean|median|max), projection (l1ratio|pca: the top-r principal subspace
// of the pooled instances, an ablation for mode shared), fiton
// (instances|holistic: what the shared projection is fitted on), r, k
// (neighbourhood, 3), beta (0.5), maxiter (300), backtrack (40), tol (1e-6), normalize
// (false), guard (true), adaptive (true), standardize (true), knn (3), top1
// (true), grid (small|paper|none), c (1), gamma (0 = 1/D̄), cvfolds (3).
// FitOptions.Warm is ignored: the fit is unsupervised plus a classifier, and
// starting W from another model's would tie the result to training history.
package mier
