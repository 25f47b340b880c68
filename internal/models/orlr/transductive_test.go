package orlr

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/solver/softmax"
)

// bruteTransductive is transductive annotation by enumeration: every
// labeling of the n instances by the allowed classes (the bag label, plus
// unk when >= 0) in which every class of the bag label occurs, weighted by
// Π_i p(y_i|x_i)/π_{y_i} (π all ones for the model's prior); it returns
// each instance's posterior over the classes (0 outside the allowed ones).
func bruteTransductive(probs [][]float64, labels []int, unk int, prior []float64) [][]float64 {
	allowed := slices.Clone(labels)
	if unk >= 0 && !slices.Contains(labels, unk) {
		allowed = append(allowed, unk)
	}
	n, nc := len(probs), len(probs[0])
	post := make([][]float64, n)
	for i := range post {
		post[i] = make([]float64, nc)
	}
	y := make([]int, n)
	total := 0.0
	var walk func(i int)
	walk = func(i int) {
		if i == n {
			for _, c := range labels {
				if !slices.Contains(y, c) {
					return
				}
			}
			w := 1.0
			for j, c := range y {
				w *= probs[j][c] / prior[c]
			}
			total += w
			for j, c := range y {
				post[j][c] += w
			}
			return
		}
		for _, c := range allowed {
			y[i] = c
			walk(i + 1)
		}
	}
	walk(0)
	for i := range post {
		for c := range post[i] {
			post[i][c] /= total
		}
	}
	return post
}

// TestTransductivePosteriorBruteForce holds transductive annotation to
// bruteTransductive on random tiny bags (1-5 instances, 1-3 labels of 5
// classes, 3 features), with prior=uniform (a random class prior divided
// out) and prior=model, with and without the unknown class: the instance
// scores are the enumerated posteriors to 1e-9, each instance's label its
// largest. The bag's labels reach every instance through the union: with
// prior=uniform a class the model's prior favours no longer takes regions
// the bag's other labels explain as well.
func TestTransductivePosteriorBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const nc, dim = 5, 3
	for _, unknown := range []bool{false, true} {
		for _, prior := range []string{PriorUniform, PriorModel} {
			classes := []string{"a", "b", "c", "d", UnknownClass}
			unk := -1
			if unknown {
				unk = 4
			}
			cfg := DefaultConfig()
			cfg.Unknown, cfg.Prior = unknown, prior
			lr := softmax.New(nc, dim)
			for i := range lr.W {
				lr.W[i] = 2 * rng.NormFloat64()
			}
			m := &Model{meta: models.Meta{Kind: Name, Classes: classes, Dim: dim, InstanceLevel: true}, cfg: cfg, lr: lr}
			pi := []float64{1, 1, 1, 1, 1}
			if prior == PriorUniform {
				s := 0.0
				for c := range pi {
					pi[c] = 0.05 + rng.Float64()
					s += pi[c]
				}
				for c := range pi {
					pi[c] /= s
				}
				m.classPrior = slices.Clone(pi)
			}
			for trial := range 200 {
				n := 1 + rng.IntN(5)
				labels := rng.Perm(4)[:1+rng.IntN(min(n, 3))]
				slices.Sort(labels)
				b := &mil.Bag{ID: "b", Labels: labels}
				probs := make([][]float64, n)
				for i := range n {
					x := make([]float64, dim)
					for j := range x {
						x[j] = rng.NormFloat64()
					}
					b.Instances = append(b.Instances, x)
					probs[i] = make([]float64, nc)
					lr.Probs(x, probs[i])
				}
				a, err := m.Annotate(context.Background(), b, models.Transductive)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteTransductive(probs, labels, unk, pi)
				for i := range n {
					for c := range nc {
						if math.Abs(a.InstanceScores[i][c]-want[i][c]) > 1e-9 {
							t.Fatalf("unknown=%v prior=%s trial %d instance %d class %d: score %v, enumeration %v",
								unknown, prior, trial, i, c, a.InstanceScores[i][c], want[i][c])
						}
					}
					best := 0
					for c := range nc {
						if want[i][c] > want[i][best] {
							best = c
						}
					}
					if a.InstanceLabels[i] != best {
						t.Fatalf("unknown=%v prior=%s trial %d instance %d: label %d, enumeration's %d", unknown, prior, trial, i, a.InstanceLabels[i], best)
					}
				}
			}
		}
	}
}

// TestPriorUniformOnlyDense checks where the class prior comes from: a
// default fit on dense data records prior=uniform and the mean of p(c|x)
// over its training instances (a distribution), through MarshalState and
// Decode; on sparse data the default is prior=model, with no prior; a
// state written before the option decodes as prior=model.
func TestPriorUniformOnlyDense(t *testing.T) {
	d := synthetic(2, 40, 3, 4)
	m, err := Fit(context.Background(), d, models.FitOptions{Seed: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.Prior != PriorUniform || len(m.classPrior) != len(m.meta.Classes) {
		t.Fatalf("dense default: prior %q, %d class priors", m.cfg.Prior, len(m.classPrior))
	}
	want := make([]float64, len(m.meta.Classes))
	n := 0
	for _, b := range d.Bags {
		for _, x := range b.Instances {
			z, err := m.MapInstance(x)
			if err != nil {
				t.Fatal(err)
			}
			p := make([]float64, len(want))
			m.lr.Probs(z, p)
			for c, v := range p {
				want[c] += v
			}
			n++
		}
	}
	sum := 0.0
	for c := range want {
		want[c] /= float64(n)
		sum += m.classPrior[c]
		if math.Abs(m.classPrior[c]-want[c]) > 1e-12 {
			t.Errorf("class prior %d: %v, mean p(c|x) %v", c, m.classPrior[c], want[c])
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("class priors sum to %v", sum)
	}
	blob, err := m.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(m.Meta(), blob)
	if err != nil || !slices.Equal(back.classPrior, m.classPrior) || back.cfg.Prior != PriorUniform {
		t.Fatalf("round trip: %v, prior %v", err, back)
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(blob, &s); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(s["config"], &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "prior")
	s["config"], _ = json.Marshal(cfg)
	delete(s, "class_prior")
	old, _ := json.Marshal(s)
	om, err := Decode(m.Meta(), old)
	if err != nil || om.cfg.Prior != PriorModel || om.classPrior != nil {
		t.Fatalf("a state without prior: %v, prior %q", err, om.cfg.Prior)
	}
	sm, err := Fit(context.Background(), sparseText(5, 20), models.FitOptions{Seed: 1, Workers: 1, Params: models.Params{"unknown": "true", "l2": "0.001"}})
	if err != nil {
		t.Fatal(err)
	}
	if sm.cfg.Prior != PriorModel || sm.classPrior != nil {
		t.Errorf("sparse default: prior %q, %d class priors", sm.cfg.Prior, len(sm.classPrior))
	}
	if _, err := ParseConfig(models.Params{"prior": "flat"}); err == nil {
		t.Error("prior=flat accepted")
	}
}
