package orlr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bagPosteriors is bagPosteriorsOpt without optional classes: the E-step of
// eq. 5, post[i][j] = p(y_i = labels[j] | Y, X), returning log p(Y | X, w).
func bagPosteriors(s *bagScratch, alg Algorithm, logits [][]float64, labels []int, post [][]float64) (float64, error) {
	return bagPosteriorsOpt(s, alg, logits, labels, 0, post)
}

// bruteForce enumerates every labeling of the bag with labels in Y (the
// others have zero probability given Y) and returns p(Y|X) and the
// posteriors p(y_i = labels[j] | Y, X), straight from eqs. 5, 11 and 13.
func bruteForce(probs [][]float64, labels []int) (float64, [][]float64) {
	n, k := len(probs), len(labels)
	joint := make([][]float64, n)
	for i := range joint {
		joint[i] = make([]float64, k)
	}
	total := 0.0
	assign := make([]int, n)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			covered := 0
			p := 1.0
			for t, j := range assign {
				covered |= 1 << j
				p *= probs[t][labels[j]]
			}
			if covered != 1<<k-1 {
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

func randomBag(rng *rand.Rand, n, classes int, scale float64) [][]float64 {
	z := make([][]float64, n)
	for i := range z {
		z[i] = make([]float64, classes)
		for c := range z[i] {
			z[i][c] = scale * rng.NormFloat64()
		}
	}
	return z
}

func softmaxRows(z [][]float64) [][]float64 {
	p := make([][]float64, len(z))
	for i, zi := range z {
		lse := logSumExp(zi)
		p[i] = make([]float64, len(zi))
		for c, v := range zi {
			p[i][c] = math.Exp(v - lse)
		}
	}
	return p
}

func newPost(n, k int) [][]float64 {
	p := make([][]float64, n)
	for i := range p {
		p[i] = make([]float64, k)
	}
	return p
}

// TestDPMatchesBruteForce checks both programmes, and the log-space
// fallback, against enumeration of all labelings on random small bags.
func TestDPMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	algs := []Algorithm{FAS, Forward, "log"}
	for trial := range 300 {
		n := 1 + rng.IntN(7)
		k := 1 + rng.IntN(min(n, 4))
		classes := k + rng.IntN(3)
		perm := rng.Perm(classes)[:k]
		labels := sortedCopy(perm)
		scale := []float64{0.5, 2, 6}[trial%3]
		z := randomBag(rng, n, classes, scale)
		wantP, wantPost := bruteForce(softmaxRows(z), labels)
		for _, alg := range algs {
			name := fmt.Sprintf("trial%d/n=%d/k=%d/%s", trial, n, k, alg)
			s := newBagScratch()
			post := newPost(n, k)
			var ll float64
			var err error
			if alg == "log" {
				// Run the log-space programme directly, as the fallback would.
				ll, err = bagPosteriors(s, FAS, z, labels, post) // fills s.lq
				if err == nil {
					var l2 float64
					l2, err = s.dp(k).logForward(s.lq[:n], post)
					ll = ll - mustFAS(t, z, labels) + l2
				}
			} else {
				ll, err = bagPosteriors(s, alg, z, labels, post)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got, want := ll, math.Log(wantP); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s: log p(Y|X) = %.12f, brute force %.12f", name, got, want)
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
}

// mustFAS returns the scaled part of the FAS log-likelihood (without the
// per-instance factors), to isolate the log-space programme's share.
func mustFAS(t *testing.T, z [][]float64, labels []int) float64 {
	t.Helper()
	s := newBagScratch()
	if _, err := bagPosteriors(s, FAS, z, labels, newPost(len(z), len(labels))); err != nil {
		t.Fatal(err)
	}
	k := len(labels)
	d := newDPWork(k)
	d.run(s.q[:len(z)], -1)
	return math.Log(d.cur[1<<k-1])
}

func sortedCopy(a []int) []int {
	b := append([]int(nil), a...)
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && b[j] < b[j-1]; j-- {
			b[j], b[j-1] = b[j-1], b[j]
		}
	}
	return b
}

// inclusionExclusion gives p(∪y = Y) over the scaled probabilities q and the
// joint p(y_i=c, ∪y=Y) in closed form:
//
//	p(∪y = Y) = Σ_{S⊆Y} (−1)^{|Y|−|S|} Π_i Σ_{c∈S} q_ic.
//
// It shares no code with the dynamic programmes.
func inclusionExclusion(q [][]float64, k int) (float64, [][]float64) {
	n := len(q)
	joint := newPost(n, k)
	total := 0.0
	for s := 1; s < 1<<k; s++ {
		sign := 1.0
		if (k-popcount(s))%2 == 1 {
			sign = -1
		}
		mass := make([]float64, n)
		prod := 1.0
		for i := range q {
			for c := range k {
				if s&(1<<c) != 0 {
					mass[i] += q[i][c]
				}
			}
			prod *= mass[i]
		}
		total += sign * prod
		for i := range q {
			rest := 1.0
			for j := range q {
				if j != i {
					rest *= mass[j]
				}
			}
			for c := range k {
				if s&(1<<c) != 0 {
					joint[i][c] += sign * q[i][c] * rest
				}
			}
		}
	}
	for i := range joint {
		for c := range joint[i] {
			joint[i][c] /= total
		}
	}
	return total, joint
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestSixtyInstanceBagDoesNotUnderflow builds a bag whose likelihood is far
// below the smallest float64 (every instance gives the bag's classes a
// probability near e^-40) and checks the log-likelihood and the posteriors
// of both programmes against the closed form.
func TestSixtyInstanceBagDoesNotUnderflow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const n, classes = 60, 10
	labels := []int{1, 4, 7}
	z := make([][]float64, n)
	for i := range z {
		z[i] = make([]float64, classes)
		z[i][0] = 40 // a class outside the bag label dominates every instance
		for _, c := range labels {
			z[i][c] = rng.NormFloat64()
		}
	}
	// Unscaled, the likelihood is below (e^-38)^60 ≈ 1e-990: zero in float64.
	logA := 0.0
	q := newPost(n, len(labels))
	for i := range z {
		ys := make([]float64, len(labels))
		for j, c := range labels {
			ys[j] = z[i][c]
		}
		lseY := logSumExp(ys)
		logA += lseY - logSumExp(z[i])
		for j := range ys {
			q[i][j] = math.Exp(ys[j] - lseY)
		}
	}
	wantScaled, wantPost := inclusionExclusion(q, len(labels))
	want := logA + math.Log(wantScaled)
	if want > -1000 {
		t.Fatalf("test bag not extreme enough: log p = %v", want)
	}
	for _, alg := range []Algorithm{FAS, Forward} {
		post := newPost(n, len(labels))
		ll, err := bagPosteriors(newBagScratch(), alg, z, labels, post)
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		if math.IsInf(ll, 0) || math.IsNaN(ll) || math.Abs(ll-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s: log p(Y|X) = %v, want %v", alg, ll, want)
		}
		for i := range post {
			for j := range post[i] {
				if math.Abs(post[i][j]-wantPost[i][j]) > 1e-9 {
					t.Errorf("%s: posterior[%d][%d] = %v, want %v", alg, i, j, post[i][j], wantPost[i][j])
				}
			}
		}
	}
}

// TestImpossibleLabelFallsBackToLogSpace gives one bag class a probability
// that underflows to zero in every instance: the linear programmes cannot
// represent the likelihood, the log-space fallback must.
func TestImpossibleLabelFallsBackToLogSpace(t *testing.T) {
	z := [][]float64{{0, -800, 1}, {2, -900, 0}, {0, -750, 0}}
	labels := []int{0, 1, 2}
	post := newPost(3, 3)
	ll, err := bagPosteriors(newBagScratch(), FAS, z, labels, post)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsInf(ll, 0) || math.IsNaN(ll) || ll > -700 {
		t.Errorf("log p(Y|X) = %v, want finite and below -700", ll)
	}
	for i := range post {
		s := 0.0
		for _, p := range post[i] {
			if math.IsNaN(p) || p < 0 {
				t.Fatalf("posterior %v", post[i])
			}
			s += p
		}
		if math.Abs(s-1) > 1e-12 {
			t.Errorf("posteriors of instance %d sum to %v", i, s)
		}
	}
	// Class 1 must be carried by someone: the instance with the least
	// negative logit for it (instance 2) is by far the most likely.
	if post[2][1] < 0.99 {
		t.Errorf("p(y_2 = 1 | Y) = %v, want ≈ 1", post[2][1])
	}
}
