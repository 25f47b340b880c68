package metriclearn

import "fmt"

// contingency returns N[c][c'] = #{j : pred=c, truth=c'} with the sizes of
// the predicted and true clusters.
func contingency(pred, truth []int) (map[[2]int]int, map[int]int, map[int]int, error) {
	if len(pred) != len(truth) {
		return nil, nil, nil, fmt.Errorf("mlca: %d predictions for %d truths", len(pred), len(truth))
	}
	n := make(map[[2]int]int)
	qp := make(map[int]int)
	qt := make(map[int]int)
	for j := range pred {
		n[[2]int{pred[j], truth[j]}]++
		qp[pred[j]]++
		qt[truth[j]]++
	}
	return n, qp, qt, nil
}

// DeltaLoss is the clustering discrepancy ‖Ĉ − C‖² of the MLCA paper between
// the partition matrices of two hard assignments, computed from the
// contingency table (spec §8) without n×n matrices:
// k̂ + k − 2 Σ N²_{cc'} / (q̂_c q_{c'}), with k̂, k the non-empty cluster counts.
// It is 0 for identical partitions (up to relabeling).
func DeltaLoss(pred, truth []int) (float64, error) {
	n, qp, qt, err := contingency(pred, truth)
	if err != nil {
		return 0, err
	}
	s := 0.0
	for cc, v := range n {
		s += float64(v) * float64(v) / (float64(qp[cc[0]]) * float64(qt[cc[1]]))
	}
	return float64(len(qp)+len(qt)) - 2*s, nil
}

// RandLoss is 1 − Rand index: the fraction of ordered pairs i≠j on which the
// two partitions disagree about "same cluster".
func RandLoss(pred, truth []int) (float64, error) {
	n, qp, qt, err := contingency(pred, truth)
	if err != nil {
		return 0, err
	}
	pairs := func(q int) float64 { return float64(q) * float64(q-1) / 2 }
	var sp, st, sn float64
	for _, v := range qp {
		sp += pairs(v)
	}
	for _, v := range qt {
		st += pairs(v)
	}
	for _, v := range n {
		sn += pairs(v)
	}
	m := float64(len(pred))
	if m < 2 {
		return 0, nil
	}
	return 2 * (sp + st - 2*sn) / (m * (m - 1)), nil
}
