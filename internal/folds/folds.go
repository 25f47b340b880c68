// Package folds splits examples into cross-validation folds. It is the one
// splitter of the product: the evaluation harness (outer folds), model
// selection inside a fit (mimlca select=cv, SyMIL's λ search) and the SVM
// grid search all draw their folds here, so a split is defined once.
//
// Every split is a pure function of its arguments: the shuffles come from a
// PCG generator seeded by (seed, stream), never from global state, so a
// split is reproducible on its own and two callers with different streams
// get unrelated splits of the same data.
package folds

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
)

// KFold partitions the indices 0..n-1 into k test folds of sizes differing by
// at most one, after a shuffle determined by seed and stream (one stream per
// repeat, so repeats of the same seed use different, reproducible splits).
// Each fold is sorted ascending.
func KFold(n, k int, seed int64, stream uint64) ([][]int, error) {
	if k < 2 || k > n {
		return nil, fmt.Errorf("k-fold: need 2 <= k <= %d bags, got k=%d", n, k)
	}
	perm := rand.New(rand.NewPCG(uint64(seed), stream)).Perm(n)
	folds := make([][]int, k)
	for f := range folds {
		folds[f] = slices.Sorted(slices.Values(perm[f*n/k : (f+1)*n/k]))
	}
	return folds, nil
}

// StratifiedKFold is KFold keeping the proportion of each stratum (examples
// with the same key) about equal across folds: strata are taken in key
// order, each shuffled, and their members dealt to the folds in turn, the
// dealing continuing from one stratum to the next so fold sizes still differ
// by at most one. Dealing starts at a random fold, so fold 0 is not always
// the largest. Each fold is sorted ascending.
func StratifiedKFold(keys []string, k int, seed int64, stream uint64) ([][]int, error) {
	n := len(keys)
	if k < 2 || k > n {
		return nil, fmt.Errorf("k-fold: need 2 <= k <= %d bags, got k=%d", n, k)
	}
	byKey := map[string][]int{}
	for i, key := range keys {
		byKey[key] = append(byKey[key], i)
	}
	strata := make([][]int, 0, len(byKey))
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		strata = append(strata, byKey[key])
	}
	rng := rand.New(rand.NewPCG(uint64(seed), stream))
	start := rng.IntN(k)
	assign := deal(n, k, strata, start, rng)
	folds := make([][]int, k)
	for i, f := range assign {
		folds[f] = append(folds[f], i) // ascending i: each fold comes out sorted
	}
	return folds, nil
}

// Binary assigns each example to one of k folds (the result's i-th entry is
// example i's fold), stratified by the binary label y so every fold keeps
// the class balance: positives then negatives are shuffled and dealt to
// folds 0, 1, ..., k-1 in turn. It is StratifiedKFold's rule with the
// positives as the first stratum and dealing starting at fold 0, in the
// per-example form the inner searches of the SVM and SyMIL loop over.
// Folds may be empty when k exceeds the number of examples.
func Binary(y []bool, k int, seed, stream uint64) []int {
	var pos, neg []int
	for i, v := range y {
		if v {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	return deal(len(y), k, [][]int{pos, neg}, 0, rand.New(rand.NewPCG(seed, stream)))
}

// deal shuffles each stratum in turn with rng and deals its members to the
// k folds round-robin, starting at fold start and continuing across strata.
// It returns the fold of each of the n examples. The strata are shuffled in
// place.
func deal(n, k int, strata [][]int, start int, rng *rand.Rand) []int {
	assign := make([]int, n)
	next := start
	for _, members := range strata {
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		for _, i := range members {
			assign[i] = next
			next = (next + 1) % k
		}
	}
	return assign
}

// Complement returns the indices of 0..n-1 not in the ascending list idx:
// the training part of a test fold.
func Complement(n int, idx []int) []int {
	out := make([]int, 0, n-len(idx))
	j := 0
	for i := 0; i < n; i++ {
		if j < len(idx) && idx[j] == i {
			j++
			continue
		}
		out = append(out, i)
	}
	return out
}
