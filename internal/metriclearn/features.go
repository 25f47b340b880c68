package metriclearn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/mimlstream/mimlstream/internal/mil"

	"gonum.org/v1/gonum/mat"
)

// Kernel names accepted by the kernel= parameter.
const (
	KernelLinear = "linear"
	KernelRBF    = "rbf"
	KernelChi2   = "chi2"
)

// ErrNegativeFeature is returned when the chi-squared kernel meets a negative
// feature, for which it is not defined.
var ErrNegativeFeature = errors.New("chi-squared kernel needs non-negative features")

// FeatureMap is the explicit feature map φ the metric is learned on. For the
// linear kernel φ(x) = x. For a kernel it is the Nyström map
// φ(x) = Λ^{-1/2} Eᵀ k_q(x) over q landmark instances (K_qq = E Λ Eᵀ), so that
// φ(a)ᵀφ(b) reproduces k(a, b) on the span of the landmarks. With every
// training instance as a landmark, Φ Φᵀ = K and the linear algorithm on Φ is
// exactly the kernel algorithm of the paper (K K† in step 1, L = K† J in step
// 11), at its O(n³) cost; with q landmarks it costs O(nq²), linear in n.
type FeatureMap struct {
	Kernel    string
	Gamma     float64
	Landmarks [][]float64
	// Proj is q×s: φ(x) = Projᵀ k_q(x).
	Proj *mat.Dense
	// Mean, when set by Center, is subtracted from φ(x): the closed form
	// has no intercept, so uncentred features with a large common offset
	// (colour means around 110 in Zhou's scene set) waste the k directions
	// of L on that offset.
	Mean []float64
	dim  int
}

// Center subtracts the column means from phi (Φ of the training rows) in
// place and records them, so that later maps are centred the same way.
func (f *FeatureMap) Center(phi *mat.Dense) { f.Mean = CenterColumns(phi) }

// CenterColumns subtracts the column means from x in place and returns them.
func CenterColumns(x *mat.Dense) []float64 {
	n, s := x.Dims()
	mean := make([]float64, s)
	for i := 0; i < n; i++ {
		for j, v := range x.RawRowView(i) {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		for j := range row {
			row[j] -= mean[j]
		}
	}
	return mean
}

// NewFeatureMap builds the map for the given training instances. landmarks
// <= 0 means every instance; gamma <= 0 means 1 / (mean distance between
// random pairs of instances), the squared Euclidean distance for rbf and the
// chi-squared distance for chi2.
func NewFeatureMap(kernel string, gamma float64, landmarks int, xs [][]float64, rng *rand.Rand) (*FeatureMap, error) {
	if len(xs) == 0 {
		return nil, ErrNoData
	}
	f := &FeatureMap{Kernel: kernel, dim: len(xs[0])}
	switch kernel {
	case KernelLinear:
		return f, nil
	case KernelRBF, KernelChi2:
	default:
		return nil, fmt.Errorf("mlca: unknown kernel %q (want linear, rbf or chi2)", kernel)
	}
	if kernel == KernelChi2 {
		for i, x := range xs {
			if err := checkNonNegative(x); err != nil {
				return nil, fmt.Errorf("training instance %d: %w", i, err)
			}
		}
	}
	if gamma <= 0 {
		f.Gamma = 1 / f.meanDistance(xs, rng)
	} else {
		f.Gamma = gamma
	}
	q := len(xs)
	idx := rng.Perm(q)
	if landmarks > 0 && landmarks < q {
		q = landmarks
	}
	idx = idx[:q]
	f.Landmarks = make([][]float64, q)
	for i, j := range idx {
		f.Landmarks[i] = append([]float64(nil), xs[j]...)
	}
	kqq := mat.NewSymDense(q, nil)
	for i := 0; i < q; i++ {
		for j := i; j < q; j++ {
			kqq.SetSym(i, j, f.kernel(f.Landmarks[i], f.Landmarks[j]))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(kqq, true) {
		return nil, errors.New("mlca: eigendecomposition of the landmark kernel did not converge")
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	lmax := vals[len(vals)-1]
	tol := float64(q) * 0x1p-52 * lmax
	var keep []int
	for j := q - 1; j >= 0; j-- {
		if vals[j] > tol {
			keep = append(keep, j)
		}
	}
	f.Proj = mat.NewDense(q, len(keep), nil)
	for c, j := range keep {
		s := 1 / math.Sqrt(vals[j])
		for i := 0; i < q; i++ {
			f.Proj.Set(i, c, vecs.At(i, j)*s)
		}
	}
	return f, nil
}

func checkNonNegative(x []float64) error {
	for j, v := range x {
		if v < 0 {
			return fmt.Errorf("feature %d = %v: %w", j, v, ErrNegativeFeature)
		}
	}
	return nil
}

// meanDistance estimates the mean kernel distance over up to 2000 random pairs.
func (f *FeatureMap) meanDistance(xs [][]float64, rng *rand.Rand) float64 {
	sum, cnt := 0.0, 0
	for range 2000 {
		a, b := xs[rng.IntN(len(xs))], xs[rng.IntN(len(xs))]
		sum += f.distance(a, b)
		cnt++
	}
	if sum <= 0 {
		return 1
	}
	return sum / float64(cnt)
}

func (f *FeatureMap) distance(a, b []float64) float64 {
	if f.Kernel == KernelChi2 {
		return chi2Distance(a, b)
	}
	return sqDist(a, b)
}

func (f *FeatureMap) kernel(a, b []float64) float64 {
	return math.Exp(-f.Gamma * f.distance(a, b))
}

// chi2Distance is Σ (a_i − b_i)² / (a_i + b_i) between the ℓ1-normalized
// vectors, the distance of the generalized RBF kernel of the paper.
func chi2Distance(a, b []float64) float64 {
	var sa, sb float64
	for i := range a {
		sa += a[i]
		sb += b[i]
	}
	if sa > 0 {
		sa = 1 / sa
	}
	if sb > 0 {
		sb = 1 / sb
	}
	d := 0.0
	for i := range a {
		x, y := a[i]*sa, b[i]*sb
		if s := x + y; s > 0 {
			t := x - y
			d += t * t / s
		}
	}
	return d
}

// Dim is the dimension of φ(x).
func (f *FeatureMap) Dim() int {
	if f.Proj == nil {
		return f.dim
	}
	_, s := f.Proj.Dims()
	return s
}

// Matrix returns Φ with one row φ(x) per instance.
func (f *FeatureMap) Matrix(xs [][]float64) *mat.Dense {
	if f.Proj == nil {
		m := mat.NewDense(len(xs), f.dim, nil)
		for i, x := range xs {
			m.SetRow(i, x)
		}
		return m
	}
	kx := mat.NewDense(len(xs), len(f.Landmarks), nil)
	for i, x := range xs {
		row := kx.RawRowView(i)
		for j, l := range f.Landmarks {
			row[j] = f.kernel(x, l)
		}
	}
	var out mat.Dense
	out.Mul(kx, f.Proj)
	return &out
}

// Projection composes φ with a learned d_φ×k map W into the projection
// g(x) = Wᵀ φ(x) that the model stores; a nil W keeps g = φ (the Euclidean
// metric in feature space).
func (f *FeatureMap) Projection(w *mat.Dense) Projection {
	p := Projection{Kernel: f.Kernel, Gamma: f.Gamma, InDim: f.dim, Landmarks: f.Landmarks}
	if f.Mean != nil {
		// g(x) = Wᵀ(φ(x) − μ) = Wᵀφ(x) − Wᵀμ.
		if w == nil {
			p.Offset = append([]float64(nil), f.Mean...)
		} else {
			var off mat.VecDense
			off.MulVec(w.T(), mat.NewVecDense(len(f.Mean), append([]float64(nil), f.Mean...)))
			p.Offset = off.RawVector().Data
		}
	}
	var m mat.Matrix
	switch {
	case f.Proj == nil && w == nil:
		p.OutDim = f.dim
		return p // identity
	case f.Proj == nil:
		m = w
	case w == nil:
		m = f.Proj
	default:
		var pw mat.Dense
		pw.Mul(f.Proj, w)
		m = &pw
	}
	r, c := m.Dims()
	p.OutDim = c
	p.Map = make([][]float64, r)
	for i := range p.Map {
		p.Map[i] = mat.Row(nil, i, m)
	}
	return p
}

// Projection is the map g from an instance to the space the metric is
// Euclidean in: d_M(a, b) = ‖g(a) − g(b)‖. For the linear kernel
// g(x) = Mapᵀ x (Map = L, d×k); for a kernel g(x) = Mapᵀ k_q(x) over the
// landmarks; with no Map, g is the identity (Euclidean baseline). Offset,
// when present, is subtracted from the result (centring).
type Projection struct {
	Kernel    string      `json:"kernel"`
	Gamma     float64     `json:"gamma,omitempty"`
	InDim     int         `json:"in_dim"`
	OutDim    int         `json:"out_dim"`
	Landmarks [][]float64 `json:"landmarks,omitempty"`
	Map       [][]float64 `json:"map,omitempty"`
	// Rows, when present, names the input feature of each row of Map, in
	// ascending order, the others' rows being zero: a map learned on sparse
	// passages keeps the features seen in training only, a few tens of
	// thousands of the 2^17 (TrainSparse). Linear kernel only.
	Rows   []int32   `json:"rows,omitempty"`
	Offset []float64 `json:"offset,omitempty"`
}

func (p *Projection) validate() error {
	switch p.Kernel {
	case KernelLinear, KernelRBF, KernelChi2:
	default:
		return fmt.Errorf("mlca: unknown kernel %q", p.Kernel)
	}
	if p.InDim <= 0 || p.OutDim <= 0 {
		return fmt.Errorf("mlca: projection dims %d→%d", p.InDim, p.OutDim)
	}
	rows := p.InDim
	if p.Rows != nil {
		if p.Kernel != KernelLinear || p.Map == nil {
			return fmt.Errorf("mlca: projection rows need a linear map")
		}
		for i, j := range p.Rows {
			if j < 0 || int(j) >= p.InDim || (i > 0 && j <= p.Rows[i-1]) {
				return fmt.Errorf("mlca: projection row %d names feature %d (input dim %d, ascending)", i, j, p.InDim)
			}
		}
		rows = len(p.Rows)
	}
	if p.Kernel != KernelLinear {
		if len(p.Landmarks) == 0 || p.Gamma <= 0 {
			return fmt.Errorf("mlca: kernel projection without landmarks or gamma")
		}
		for _, l := range p.Landmarks {
			if len(l) != p.InDim {
				return fmt.Errorf("mlca: landmark of dim %d, want %d", len(l), p.InDim)
			}
		}
		rows = len(p.Landmarks)
	}
	if p.Offset != nil && len(p.Offset) != p.OutDim {
		return fmt.Errorf("mlca: projection offset of dim %d, want %d", len(p.Offset), p.OutDim)
	}
	if p.Map == nil {
		if p.Kernel != KernelLinear || p.OutDim != p.InDim {
			return fmt.Errorf("mlca: identity projection must be linear %d→%d", p.InDim, p.InDim)
		}
		return nil
	}
	if len(p.Map) != rows {
		return fmt.Errorf("mlca: projection map has %d rows, want %d", len(p.Map), rows)
	}
	for _, r := range p.Map {
		if len(r) != p.OutDim {
			return fmt.Errorf("mlca: projection map row of %d, want %d", len(r), p.OutDim)
		}
	}
	return nil
}

// apply writes g(x) into dst (len OutDim); scratch needs len(Landmarks).
func (p *Projection) apply(x, dst, scratch []float64) {
	switch {
	case p.Map == nil:
		copy(dst, x)
	default:
		in := x
		if p.Kernel != KernelLinear {
			f := FeatureMap{Kernel: p.Kernel, Gamma: p.Gamma}
			for j, l := range p.Landmarks {
				scratch[j] = f.kernel(x, l)
			}
			in = scratch
		}
		clear(dst)
		if p.Rows != nil {
			for r, i := range p.Rows {
				if v := in[i]; v != 0 {
					for c, w := range p.Map[r] {
						dst[c] += v * w
					}
				}
			}
			break
		}
		for i, v := range in {
			if v == 0 {
				continue
			}
			for c, w := range p.Map[i] {
				dst[c] += v * w
			}
		}
	}
	for c, o := range p.Offset {
		dst[c] -= o
	}
}

// applySparse writes g(x) into dst for a sparse instance: the same map as
// apply on x densified, in O(nnz) for a linear map (a merge of x's indices
// with Rows when the map keeps only seen features).
func (p *Projection) applySparse(x mil.SparseVec, dst, scratch []float64) {
	if p.Kernel != KernelLinear || p.Map == nil {
		dense := make([]float64, p.InDim)
		for i, j := range x.Idx {
			dense[j] = x.Val[i]
		}
		p.apply(dense, dst, scratch)
		return
	}
	clear(dst)
	r := 0
	for i, j := range x.Idx {
		row := int(j)
		if p.Rows != nil {
			for r < len(p.Rows) && p.Rows[r] < j {
				r++
			}
			if r == len(p.Rows) {
				break
			}
			if p.Rows[r] != j {
				continue
			}
			row = r
		}
		if v := x.Val[i]; v != 0 {
			for c, w := range p.Map[row] {
				dst[c] += v * w
			}
		}
	}
	for c, o := range p.Offset {
		dst[c] -= o
	}
}

// project writes g of instance j of b into dst, whichever form b holds its
// instances in.
func (p *Projection) project(b *mil.Bag, j int, dst, scratch []float64) {
	if b.IsSparse() {
		p.applySparse(b.Sparse[j], dst, scratch)
		return
	}
	p.apply(b.Instances[j], dst, scratch)
}
