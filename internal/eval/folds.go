package eval

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/mimlstream/mimlstream/internal/mil"
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

// StratifiedKFold is KFold keeping the proportion of each stratum (bags with
// the same key) about equal across folds: strata are taken in key order, each
// shuffled, and their members dealt to the folds in turn, the dealing
// continuing from one stratum to the next so fold sizes still differ by at
// most one.
func StratifiedKFold(keys []string, k int, seed int64, stream uint64) ([][]int, error) {
	n := len(keys)
	if k < 2 || k > n {
		return nil, fmt.Errorf("k-fold: need 2 <= k <= %d bags, got k=%d", n, k)
	}
	strata := map[string][]int{}
	for i, key := range keys {
		strata[key] = append(strata[key], i)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), stream))
	folds := make([][]int, k)
	next := rng.IntN(k) // where dealing starts, so fold 0 is not always the largest
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for key := range strata {
			if !yield(key) {
				return
			}
		}
	}) {
		members := strata[key]
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		for _, i := range members {
			folds[next] = append(folds[next], i)
			next = (next + 1) % k
		}
	}
	for _, f := range folds {
		slices.Sort(f)
	}
	return folds, nil
}

// labelSetKey is the stratum of a bag: its label set.
func labelSetKey(b *mil.Bag) string {
	if b.Labels == nil {
		return "unlabeled"
	}
	parts := make([]string, len(b.Labels))
	for i, l := range b.Labels {
		parts[i] = strconv.Itoa(l)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// complement returns the indices of 0..n-1 not in the sorted list idx.
func complement(n int, idx []int) []int {
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

// mixSeed derives the model seed of one fit from the run seed, the repeat and
// the fold (splitmix64 finaliser), so every fit is reproducible on its own
// and neighbouring (repeat, fold) pairs get unrelated seeds.
func mixSeed(seed int64, repeat, fold int) int64 {
	z := uint64(seed) + 0x9e3779b97f4a7c15*uint64(repeat*1_000_003+fold+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1) // non-negative
}
