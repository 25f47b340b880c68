package svm

import (
	"context"
	"math"
	"reflect"
	"testing"
)

// threeClassProblem has class 0 when x0 > 0, class 1 when x1 > 0 (both may
// hold), and class 2 never: the last SVM must be the constant −1.
func threeClassProblem() ([][]float64, [][]int) {
	X, _ := randProblem(11, 90, 2, 0)
	labels := make([][]int, len(X))
	for i, x := range X {
		labels[i] = []int{}
		if x[0] > 0 {
			labels[i] = append(labels[i], 0)
		}
		if x[1] > 0 {
			labels[i] = append(labels[i], 1)
		}
	}
	return X, labels
}

func TestOneVsRestGrid(t *testing.T) {
	X, labels := threeClassProblem()
	grid := Grid{C: []float64{0.1, 10}, Gamma: []float64{0.01, 1}}
	train := func(workers int) *OneVsRest {
		o, err := TrainOneVsRest(context.Background(), X, labels, 3, OVRConfig{Grid: &grid, Folds: 3, Seed: 1, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := train(1)
	if !reflect.DeepEqual(o, train(2)) {
		t.Error("result depends on the number of workers")
	}
	for c := 0; c < 2; c++ {
		ch := o.Chosen[c]
		if ch.C != 10 || ch.CVError > 0.1 {
			t.Errorf("class %d: chose %+v; the boundary is sharp so C=10 should win with CV error <= 0.1", c, ch)
		}
	}
	wrong := 0
	for i, x := range X {
		d := o.Decisions(x)
		if d[2] != -1 {
			t.Fatalf("absent class decision %v, want -1", d[2])
		}
		for c := 0; c < 2; c++ {
			has := false
			for _, l := range labels[i] {
				has = has || l == c
			}
			if (d[c] > 0) != has {
				wrong++
			}
		}
	}
	if wrong > 4 {
		t.Errorf("%d training errors over 180 decisions", wrong)
	}
}

func TestMeanSqDist(t *testing.T) {
	X := [][]float64{{0, 0}, {3, 4}, {0, 4}}
	// Pairs: 25, 16, 9.
	if got := MeanSqDist(X); math.Abs(got-50.0/3) > 1e-12 {
		t.Errorf("MeanSqDist = %v, want 50/3", got)
	}
}
