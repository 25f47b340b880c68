package svm

import "math"

// The two passes over the examples that each SMO iteration makes, written
// once as Go loops (the reference) and once with AVX2 blocks of four
// (pass_amd64.s) that take the same decisions on the same floats: the
// arithmetic is the Go loops', operation for operation, without fused
// multiply-adds, and where four lanes replace one running maximum or
// minimum, the lanes are merged as the sequential scan would have merged
// them (TestPassesMatchGo, TestSolveVectorMatchesGo).

// updateSelect adds ki[t]·di + kj[t]·dj to yg[t] for every t and returns
// the t maximising upSel[t] − yg[t] (its value and index; the last t on a
// tie), from −MaxFloat64 and −1: upSel is 0 or −∞, so only a member of
// I_up can be chosen.
func updateSelect(yg, ki, kj, upSel []float64, di, dj float64) (float64, int) {
	return updateSelectFrom(yg, ki, kj, upSel, di, dj, 0, -math.MaxFloat64, -1)
}

// updateSelectFrom runs updateSelect's loop from t on, from the running
// maximum gmax at iSel.
func updateSelectFrom(yg, ki, kj, upSel []float64, di, dj float64, t int, gmax float64, iSel int) (float64, int) {
	n := len(yg)
	ki, kj, upSel = ki[:n], kj[:n], upSel[:n]
	for ; t < n; t++ {
		gt := yg[t] + (ki[t]*di + kj[t]*dj)
		yg[t] = gt
		if v := upSel[t] - gt; v >= gmax {
			gmax, iSel = v, t
		}
	}
	return gmax, iSel
}

// updateSelectVec is updateSelect with the blocks of four in AVX2. Each
// lane keeps the last index of its residue class whose value is >= its
// running maximum; the scan's choice is the largest index holding the
// overall maximum, which is the largest index among the lanes holding it.
func updateSelectVec(yg, ki, kj, upSel []float64, di, dj float64) (float64, int) {
	n := len(yg)
	n4 := n &^ 3
	if n4 == 0 {
		return updateSelect(yg, ki, kj, upSel, di, dj)
	}
	ki, kj, upSel = ki[:n], kj[:n], upSel[:n]
	best := [4]float64{-math.MaxFloat64, -math.MaxFloat64, -math.MaxFloat64, -math.MaxFloat64}
	idx := [4]int64{-1, -1, -1, -1}
	updateSelectAVX2(&yg[0], &ki[0], &kj[0], &upSel[0], n4, di, dj, &best, &idx)
	gmax, iSel := -math.MaxFloat64, -1
	for u := range best {
		if idx[u] < 0 {
			continue
		}
		if best[u] > gmax || (best[u] == gmax && int(idx[u]) > iSel) {
			gmax, iSel = best[u], int(idx[u])
		}
	}
	return updateSelectFrom(yg, ki, kj, upSel, di, dj, n4, gmax, iSel)
}

// thrShrink is the factor of the j pass's filter: an example whose
// −gp²/quad cannot reach objMin is one with gp² < −objMin·thrShrink·quad
// (see SolveBoundedFrom), up to the rounding of the division and product.
const thrShrink = 1 - 1e-12

// jPassVec is the second-order j pass (Working set selection 2) over every
// example, lowSel being lowPen with −∞ for a shrunk variable, so that a
// shrunk variable counts neither in gmax2 nor as a candidate, as when the
// pass walks the active list. It returns gmax2, the maximum of yg + lowSel,
// and the chosen j: the last example whose objective equals the least
// over the violators, which is the Go loop's choice (it keeps the last t
// with obj <= the running minimum, and its filter passes every example
// that could equal it). jPassAVX2 runs the blocks of four with a lane's
// minimum and last index per residue class, its filter from the lanes'
// overall minimum as of the block before (a filter that rules out less
// evaluates more examples, none of which can beat the least); the lanes are
// merged by value and then by the larger index, and the tail continues as
// the Go loop.
func jPassVec(yg, lowSel, qd, ki []float64, kii, gmax float64) (gmax2 float64, jSel int) {
	n := len(yg)
	lowSel, qd, ki = lowSel[:n], qd[:n], ki[:n]
	gmax2, jSel = math.Inf(-1), -1
	objMin, thr := math.Inf(1), math.Inf(-1)
	n4 := n &^ 3
	if n4 > 0 {
		inf := math.Inf(1)
		vmax := [4]float64{-inf, -inf, -inf, -inf}
		omin := [4]float64{inf, inf, inf, inf}
		oidx := [4]int64{-1, -1, -1, -1}
		jPassAVX2(&yg[0], &lowSel[0], &qd[0], &ki[0], n4, kii, gmax, tau, thrShrink, &vmax, &omin, &oidx)
		for u := range 4 {
			// The lanes' maxima, folded in as the loop's test would:
			// gmax2 only enters gmax + gmax2 < eps, where the sign of
			// a zero maximum (the one thing the order of the fold
			// could change) does not matter.
			if vmax[u] > gmax2 {
				gmax2 = vmax[u]
			}
			if oidx[u] >= 0 && (omin[u] < objMin || (omin[u] == objMin && int(oidx[u]) > jSel)) {
				objMin, jSel = omin[u], int(oidx[u])
			}
		}
		if jSel >= 0 {
			thr = -objMin * thrShrink
		}
	}
	return jPassFrom(yg, lowSel, qd, ki, kii, gmax, false, n4, gmax2, jSel, objMin, thr)
}

// addRow adds ys[t]·row[t]·d to grad[t] for every t (a warm start's
// Q·alpha0, one alpha at a time), in AVX2 blocks of four where vec holds:
// the same floats.
func addRow(vec bool, grad, ys, row []float64, d float64) {
	n := len(grad)
	ys, row = ys[:n], row[:n]
	t := 0
	if n4 := n &^ 3; vec && n4 > 0 {
		addRowAVX2(&grad[0], &ys[0], &row[0], n4, d)
		t = n4
	}
	for ; t < n; t++ {
		grad[t] += ys[t] * row[t] * d
	}
}

// jPassGo is the second-order j pass as a Go loop over every example
// (lowSel: lowPen with −∞ for a shrunk variable), or by the maximal
// violation alone with firstOrder: the reference jPassVec is held to, and
// the pass where there are no AVX2 passes.
func jPassGo(yg, lowSel, qd, ki []float64, kii, gmax float64, firstOrder bool) (gmax2 float64, jSel int) {
	return jPassFrom(yg, lowSel, qd, ki, kii, gmax, firstOrder, 0, math.Inf(-1), -1, math.Inf(1), math.Inf(-1))
}

// jPassFrom runs the j pass's Go loop over the examples from t on, from
// the running maximum gmax2, choice jSel, its objective objMin and the
// filter thr.
//
// Every example's step is computed, the violators' (gd > 0) and the
// others' (from max(gd, 0), which is gd for a violator): a branch on gd > 0
// before the division was mispredicted about as often as not, and cost more
// than the divisions it spared. The update tests gd > 0 after obj <= objMin,
// which is rarely true once a violator has been seen, so the choice is the
// violators' only. thr spares the division for an example that cannot
// reach objMin: −gp²/quad ≤ objMin needs gp² ≥ −objMin·quad up to the
// rounding of the division and of the product, so gp² < thr·quad, thr =
// −objMin·thrShrink, rules out what the exact test would reject, nothing
// more (before a violator is seen thr is −∞, and it stays −∞ for the
// first-order rule, which has no division to spare). Few examples pass it
// once objMin has a violator's value: the division, which bounded the pass,
// is made for those only, and the choice is the same.
func jPassFrom(yg, lowSel, qd, ki []float64, kii, gmax float64, firstOrder bool, t int, gmax2 float64, jSel int, objMin, thr float64) (float64, int) {
	n := len(yg)
	lowSel, qd, ki = lowSel[:n], qd[:n], ki[:n]
	for ; t < n; t++ {
		v := yg[t] + lowSel[t]
		if v > gmax2 {
			gmax2 = v
		}
		gd := gmax + v
		gp := positivePart(gd)
		quad := kii + qd[t] - 2*ki[t]
		if quad <= 0 {
			quad = tau
		}
		if gp*gp < thr*quad {
			continue
		}
		obj := -gp * gp / quad
		if firstOrder {
			obj = -gp
		}
		if obj <= objMin && gd > 0 {
			objMin, jSel = obj, t
			if !firstOrder {
				thr = -objMin * thrShrink
			}
		}
	}
	return gmax2, jSel
}
