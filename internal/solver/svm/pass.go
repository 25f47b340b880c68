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
	n := len(yg)
	ki, kj, upSel = ki[:n], kj[:n], upSel[:n]
	gmax, iSel := -math.MaxFloat64, -1
	for t := 0; t < n; t++ {
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
	for t := n4; t < n; t++ {
		gt := yg[t] + (ki[t]*di + kj[t]*dj)
		yg[t] = gt
		if v := upSel[t] - gt; v >= gmax {
			gmax, iSel = v, t
		}
	}
	return gmax, iSel
}

// jPassVec is the second-order j pass (Working set selection 2) over every
// example, lowSel being lowPen with −∞ for a shrunk variable, so that a
// shrunk variable counts neither in gmax2 nor as a candidate, as when the
// pass walks the active list. It returns gmax2, the maximum of yg + lowSel,
// and the chosen j with its objective. jScanAVX2 skips the blocks of four
// in which no example passes the division-sparing filter of the current
// thr (thr only rises, so a block it skips the Go loop would have skipped
// too); the Go loop handles the others, example by example, exactly.
func jPassVec(yg, lowSel, qd, ki []float64, kii, gmax float64) (gmax2 float64, jSel int) {
	n := len(yg)
	lowSel, qd, ki = lowSel[:n], qd[:n], ki[:n]
	gmax2, jSel = math.Inf(-1), -1
	objMin, thr := math.Inf(1), math.Inf(-1)
	step := func(t int) {
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
			return
		}
		obj := -gp * gp / quad
		if obj <= objMin && gd > 0 {
			objMin, jSel = obj, t
			thr = -objMin * (1 - 1e-12)
		}
	}
	n4 := n &^ 3
	vmax := [4]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	for t := 0; t < n4; t += 4 {
		if t = jScanAVX2(&yg[0], &lowSel[0], &qd[0], &ki[0], t, n4, kii, gmax, thr, tau, &vmax); t >= n4 {
			break
		}
		for u := t; u < t+4; u++ {
			step(u)
		}
	}
	for t := n4; t < n; t++ {
		step(t)
	}
	// The lanes' maxima, folded in as the loop's test would: gmax2 only
	// enters gmax + gmax2 < eps, where the sign of a zero maximum (the
	// one thing the order of the fold could change) does not matter.
	for _, v := range vmax {
		if v > gmax2 {
			gmax2 = v
		}
	}
	return gmax2, jSel
}
