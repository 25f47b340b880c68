package folds

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

func TestKFoldPartition(t *testing.T) {
	tests := []struct {
		n, k int
		seed int64
	}{
		{10, 2, 1}, {10, 10, 1}, {591, 10, 7}, {23, 5, -3}, {7, 3, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("n=%d k=%d", tc.n, tc.k), func(t *testing.T) {
			folds, err := KFold(tc.n, tc.k, tc.seed, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkPartition(t, folds, tc.n, tc.k)
			again, _ := KFold(tc.n, tc.k, tc.seed, 0)
			if !reflect.DeepEqual(folds, again) {
				t.Error("same seed and stream gave different folds")
			}
			if tc.n >= 20 {
				other, _ := KFold(tc.n, tc.k, tc.seed, 1)
				if reflect.DeepEqual(folds, other) {
					t.Error("another stream (repeat) gave the same folds")
				}
				other, _ = KFold(tc.n, tc.k, tc.seed+1, 0)
				if reflect.DeepEqual(folds, other) {
					t.Error("another seed gave the same folds")
				}
			}
		})
	}
	for _, k := range []int{0, 1, 11} {
		if _, err := KFold(10, k, 1, 0); err == nil {
			t.Errorf("KFold(10, %d) succeeded, want an error", k)
		}
	}
}

func checkPartition(t *testing.T, folds [][]int, n, k int) {
	t.Helper()
	if len(folds) != k {
		t.Fatalf("%d folds, want %d", len(folds), k)
	}
	seen := make([]int, n)
	lo, hi := n, 0
	for _, f := range folds {
		if !slices.IsSorted(f) {
			t.Errorf("fold %v not sorted", f)
		}
		lo, hi = min(lo, len(f)), max(hi, len(f))
		for _, i := range f {
			seen[i]++
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("index %d is in %d folds, want 1", i, c)
		}
	}
	if hi-lo > 1 {
		t.Errorf("fold sizes range %d..%d, want a spread of at most 1", lo, hi)
	}
}

func TestStratifiedKFold(t *testing.T) {
	// 3 strata of uneven sizes.
	var keys []string
	for i := 0; i < 50; i++ {
		switch {
		case i%5 == 0:
			keys = append(keys, "{0,1}")
		case i%2 == 0:
			keys = append(keys, "{}")
		default:
			keys = append(keys, "{0}")
		}
	}
	for _, k := range []int{2, 3, 10} {
		folds, err := StratifiedKFold(keys, k, 42, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkPartition(t, folds, len(keys), k)
		for _, key := range []string{"{0,1}", "{}", "{0}"} {
			lo, hi := len(keys), 0
			for _, f := range folds {
				c := 0
				for _, i := range f {
					if keys[i] == key {
						c++
					}
				}
				lo, hi = min(lo, c), max(hi, c)
			}
			if hi-lo > 1 {
				t.Errorf("k=%d stratum %s: per-fold counts range %d..%d, want a spread of at most 1", k, key, lo, hi)
			}
		}
		again, _ := StratifiedKFold(keys, k, 42, 0)
		if !reflect.DeepEqual(folds, again) {
			t.Errorf("k=%d: not deterministic", k)
		}
	}
}

// TestBinaryStratified moved from package svm (its Folds is Binary with the
// SVM's stream).
func TestBinaryStratified(t *testing.T) {
	y := make([]bool, 50)
	for i := 0; i < 20; i++ {
		y[i] = true
	}
	fold := Binary(y, 5, 3, 0x5f3759df)
	pos, all := make([]int, 5), make([]int, 5)
	for i, f := range fold {
		all[f]++
		if y[i] {
			pos[f]++
		}
	}
	for f := range 5 {
		if pos[f] != 4 || all[f] != 10 {
			t.Errorf("fold %d: %d positives of %d, want 4 of 10", f, pos[f], all[f])
		}
	}
	if !reflect.DeepEqual(fold, Binary(y, 5, 3, 0x5f3759df)) {
		t.Error("folds differ for the same seed")
	}
}

// The three splitters this package replaced, verbatim, as references: the
// shared dealing must reproduce every split they made, or fold assignments
// (and so selected parameters and reported scores) would change.

func refStratifiedKFold(keys []string, k int, seed int64, stream uint64) [][]int {
	strata := map[string][]int{}
	for i, key := range keys {
		strata[key] = append(strata[key], i)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), stream))
	folds := make([][]int, k)
	next := rng.IntN(k)
	sorted := make([]string, 0, len(strata))
	for key := range strata {
		sorted = append(sorted, key)
	}
	slices.Sort(sorted)
	for _, key := range sorted {
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
	return folds
}

// refSVMFolds is svm.Folds.
func refSVMFolds(y []bool, k int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x5f3759df))
	var pos, neg []int
	for i, v := range y {
		if v {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	fold := make([]int, len(y))
	next := 0
	for _, idx := range [][]int{pos, neg} {
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for _, i := range idx {
			fold[i] = next % k
			next++
		}
	}
	return fold
}

// refSymilFolds is symil's stratifiedFolds with its generator.
func refSymilFolds(pos []bool, k int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0xf01d))
	fold := make([]int, len(pos))
	var p, n []int
	for i, v := range pos {
		if v {
			p = append(p, i)
		} else {
			n = append(n, i)
		}
	}
	rng.Shuffle(len(p), func(a, b int) { p[a], p[b] = p[b], p[a] })
	rng.Shuffle(len(n), func(a, b int) { n[a], n[b] = n[b], n[a] })
	for j, i := range append(p, n...) {
		fold[i] = j % k
	}
	return fold
}

func TestSplitsMatchTheReplacedSplitters(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 300 {
		n := 2 + rng.IntN(60)
		k := 2 + rng.IntN(min(n-1, 9))
		seed := rng.Int64() - rng.Int64()
		stream := rng.Uint64()
		keys := make([]string, n)
		y := make([]bool, n)
		strata := 1 + rng.IntN(4)
		for i := range keys {
			keys[i] = "{" + strconv.Itoa(rng.IntN(strata)) + "}"
			y[i] = rng.IntN(3) == 0
		}
		got, err := StratifiedKFold(keys, k, seed, stream)
		if err != nil {
			t.Fatal(err)
		}
		if want := refStratifiedKFold(keys, k, seed, stream); !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: StratifiedKFold = %v, the replaced splitter gave %v", trial, got, want)
		}
		useed := uint64(seed)
		if got, want := Binary(y, k, useed, 0x5f3759df), refSVMFolds(y, k, useed); !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: Binary = %v, svm.Folds gave %v", trial, got, want)
		}
		if got, want := Binary(y, k, useed, 0xf01d), refSymilFolds(y, k, useed); !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: Binary = %v, symil's stratifiedFolds gave %v", trial, got, want)
		}
	}
}

func TestComplement(t *testing.T) {
	tests := []struct {
		n    int
		idx  []int
		want []int
	}{
		{5, []int{1, 3}, []int{0, 2, 4}},
		{3, nil, []int{0, 1, 2}},
		{3, []int{0, 1, 2}, []int{}},
		{1, []int{0}, []int{}},
	}
	for _, tc := range tests {
		if got := Complement(tc.n, tc.idx); !slices.Equal(got, tc.want) {
			t.Errorf("Complement(%d, %v) = %v, want %v", tc.n, tc.idx, got, tc.want)
		}
	}
}
