package orlr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bruteForceOpt enumerates every labeling of the bag with labels in
// allowed and keeps those whose union contains every class of allowed
// except possibly those whose bit is set in opt; it returns the probability
// of that event and the posteriors p(y_i = allowed[j] | event, X).
func bruteForceOpt(probs [][]float64, allowed []int, opt int) (float64, [][]float64) {
	n, k := len(probs), len(allowed)
	required := (1<<k - 1) &^ opt
	joint := newPost(n, k)
	total := 0.0
	assign := make([]int, n)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			covered := 0
			p := 1.0
			for t, j := range assign {
				covered |= 1 << j
				p *= probs[t][allowed[j]]
			}
			if covered&required != required {
				return
			}
			total += p
			for t, j := range assign {
				joint[t][j] += p
			}
			return
		}
		for j := range k {
			assign[i] = j
			rec(i + 1)
		}
	}
	rec(0)
	for i := range joint {
		for j := range joint[i] {
			joint[i][j] /= total
		}
	}
	return total, joint
}

// TestDPWithUnknownMatchesBruteForce checks the programmes with an optional
// (unknown) class, including bags whose only allowed class is the unknown
// one (an empty bag label), against enumeration, for both programmes and
// the log-space fallback.
func TestDPWithUnknownMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	for trial := range 300 {
		n := 1 + rng.IntN(6)
		k := rng.IntN(min(n, 4) + 1) // required classes, 0 = empty bag label
		classes := k + 1 + rng.IntN(3)
		perm := rng.Perm(classes)
		allowed := append(sortedCopy(perm[:k]), perm[k]) // the unknown class last
		opt := 1 << k
		if trial%7 == 6 && k > 0 {
			opt |= 1 // two optional classes: the mask is general
		}
		z := randomBag(rng, n, classes, []float64{0.5, 2, 6}[trial%3])
		wantP, wantPost := bruteForceOpt(softmaxRows(z), allowed, opt)
		for _, alg := range []Algorithm{FAS, Forward, "log"} {
			name := fmt.Sprintf("trial%d/n=%d/k=%d/opt=%b/%s", trial, n, k, opt, alg)
			s := newBagScratch()
			post := newPost(n, len(allowed))
			var ll float64
			var err error
			if alg == "log" {
				ll, err = bagPosteriorsOpt(s, FAS, z, allowed, opt, post) // fills s.lq and the scaling
				if err == nil {
					d := s.dp(len(allowed))
					d.run(s.q[:n], -1)
					scaled := math.Log(d.mass(d.cur))
					var l2 float64
					l2, err = d.logForward(s.lq[:n], post)
					ll = ll - scaled + l2
				}
			} else {
				ll, err = bagPosteriorsOpt(s, alg, z, allowed, opt, post)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if want := math.Log(wantP); math.Abs(ll-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s: log p = %.12f, brute force %.12f", name, ll, want)
			}
			for i := range post {
				for j := range post[i] {
					if d := math.Abs(post[i][j] - wantPost[i][j]); d > 1e-9 {
						t.Errorf("%s: posterior[%d][%d] = %.12f, brute force %.12f", name, i, j, post[i][j], wantPost[i][j])
					}
				}
			}
		}
	}
	if _, err := bagPosteriorsOpt(newBagScratch(), FAS, [][]float64{{0, 0}}, []int{0}, 2, newPost(1, 1)); err == nil {
		t.Error("an optional-class mask outside the bag label was accepted")
	}
}
