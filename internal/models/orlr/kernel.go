package orlr

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/mimlstream/mimlstream/internal/solver/ovr"
)

// rbf is the kernel feature map of Section 4.3: k(x) = [K(x, d_1) … K(x, d_S)]
// with K(x, x') = exp(−‖x − x'‖² / δ), over a dictionary of training
// instances (all of them, or a random fraction q: Section 6.6.3).
type rbf struct {
	Delta float64     `json:"delta"`
	Dict  [][]float64 `json:"dict"`
}

// meanSquaredDistance returns the mean of ‖x_i − x_j‖² over ordered pairs
// i ≠ j in O(N d) through Σ_{i,j}‖x_i−x_j‖² = 2N Σ‖x_i‖² − 2‖Σ x_i‖².
func meanSquaredDistance(xs [][]float64) float64 {
	n := len(xs)
	if n < 2 {
		return 0
	}
	d := len(xs[0])
	sum := make([]float64, d)
	sq := 0.0
	for _, x := range xs {
		for j, v := range x {
			sum[j] += v
			sq += v * v
		}
	}
	ss := 0.0
	for _, v := range sum {
		ss += v * v
	}
	total := 2*float64(n)*sq - 2*ss
	return max(total, 0) / float64(n*(n-1))
}

// newRBF builds the kernel map from the training instances: δ = s × mean
// squared pairwise distance (Section 6.5) and a dictionary of
// ceil(frac × N) instances drawn without replacement (kept in data order).
func newRBF(xs [][]float64, s, frac float64, rng *rand.Rand) (*rbf, error) {
	if len(xs) == 0 {
		return nil, errors.New("no training instances for the kernel dictionary")
	}
	msd := meanSquaredDistance(xs)
	if !(msd > 0) {
		return nil, errors.New("all training instances are identical: the RBF width is undefined")
	}
	size := int(math.Ceil(frac * float64(len(xs))))
	size = min(max(size, 1), len(xs))
	idx := rng.Perm(len(xs))[:size]
	sort.Ints(idx)
	dict := make([][]float64, size)
	for i, j := range idx {
		dict[i] = append([]float64(nil), xs[j]...)
	}
	return &rbf{Delta: s * msd, Dict: dict}, nil
}

// mapInto writes k(x) into out (len(Dict)).
func (k *rbf) mapInto(x, out []float64) {
	inv := 1 / k.Delta
	for i, d := range k.Dict {
		s := 0.0
		for j, v := range d {
			t := x[j] - v
			s += t * t
		}
		out[i] = math.Exp(-s * inv)
	}
}

// id is a stable identifier of the map from raw features: the hash of δ,
// the dictionary and, when there is one, the scaler applied before the
// kernel (absent from the hash when nil, so models written before scaling
// existed keep their identifier).
func (k *rbf) id(sc *ovr.Scaler) string {
	h := sha256.New()
	var b [8]byte
	put := func(v float64) {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	h.Write([]byte("orlr-rbf-v1"))
	put(k.Delta)
	put(float64(len(k.Dict)))
	for _, d := range k.Dict {
		put(float64(len(d)))
		for _, v := range d {
			put(v)
		}
	}
	if sc != nil {
		h.Write([]byte("scaler:" + string(sc.Mode)))
		for j := range sc.Mean {
			put(sc.Mean[j])
			put(sc.Scale[j])
		}
	}
	return "rbf-" + hex.EncodeToString(h.Sum(nil)[:12])
}
