package imageseg_test

import (
	"bufio"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media/imageseg"
	"github.com/mimlstream/mimlstream/internal/media/photo"
)

// The segmenters as they were before their fast paths (SLIC's squared
// column offsets taken once per window, Components without sizes when no
// piece is a speck, Merge's pairs made unique before the speck passes by
// a hash set and its labels renumbered in place): the references
// TestSegmentersMatchReference holds the fast paths to, label for label.

func refSLIC(lab *photo.Lab, k int, m float64, iterations int) *imageseg.Segmentation {
	w, h := lab.W, lab.H
	n := w * h
	step := math.Sqrt(float64(n) / float64(k))
	nx := max(1, int(math.Round(float64(w)/step)))
	ny := max(1, int(math.Round(float64(h)/step)))
	sx, sy := float64(w)/float64(nx), float64(h)/float64(ny)
	type center struct{ l, a, b, x, y float32 }
	cs := make([]center, 0, nx*ny)
	for j := range ny {
		for i := range nx {
			x, y := int((float64(i)+0.5)*sx), int((float64(j)+0.5)*sy)
			p := y*w + x
			cs = append(cs, center{lab.L[p], lab.A[p], lab.B[p], float32(x), float32(y)})
		}
	}
	S := max(sx, sy)
	invS2m2 := float32(m * m / (S * S))
	win := int(math.Ceil(S))
	labels := make([]int32, n)
	dist := make([]float32, n)
	type sum struct{ l, a, b, x, y, n float64 }
	sums := make([]sum, len(cs))
	for it := 0; it < iterations; it++ {
		for i := range dist {
			dist[i] = math.MaxFloat32
		}
		for c, ce := range cs {
			cx, cy := int(ce.x+0.5), int(ce.y+0.5)
			x0, x1 := max(0, cx-win), min(w, cx+win+1)
			y0, y1 := max(0, cy-win), min(h, cy+win+1)
			for y := y0; y < y1; y++ {
				dy := float32(y) - ce.y
				dy2 := dy * dy
				row := y * w
				L, A, B := lab.L[row+x0:row+x1], lab.A[row+x0:row+x1], lab.B[row+x0:row+x1]
				D := dist[row+x0 : row+x1]
				lb := labels[row+x0 : row+x1]
				for i := range L {
					dl, da, db := L[i]-ce.l, A[i]-ce.a, B[i]-ce.b
					dx := float32(x0+i) - ce.x
					d := dl*dl + da*da + db*db + (dx*dx+dy2)*invS2m2
					if d < D[i] {
						D[i] = d
						lb[i] = int32(c)
					}
				}
			}
		}
		clear(sums)
		for y := range h {
			for x := range w {
				p := y*w + x
				s := &sums[labels[p]]
				s.l += float64(lab.L[p])
				s.a += float64(lab.A[p])
				s.b += float64(lab.B[p])
				s.x += float64(x)
				s.y += float64(y)
				s.n++
			}
		}
		for c := range cs {
			if s := sums[c]; s.n > 0 {
				cs[c] = center{float32(s.l / s.n), float32(s.a / s.n), float32(s.b / s.n), float32(s.x / s.n), float32(s.y / s.n)}
			}
		}
	}
	return &imageseg.Segmentation{W: w, H: h, N: len(cs), Labels: labels}
}

func refComponents(s *imageseg.Segmentation, minSize int) *imageseg.Segmentation {
	w := s.W
	n := len(s.Labels)
	// Two-pass connected-component labelling: union each pixel with its
	// left and upper neighbours of the same label, then number the roots
	// in order of first pixel.
	parent := make([]int32, n)
	find := func(a int32) int32 {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	union := func(a, b int32) {
		ra, rb := find(a), find(b)
		if ra < rb {
			parent[rb] = ra
		} else if rb < ra {
			parent[ra] = rb
		}
	}
	for p, l := range s.Labels {
		parent[p] = int32(p)
		if l < 0 {
			continue
		}
		if p%w > 0 && s.Labels[p-1] == l {
			parent[p] = parent[p-1]
		}
		if p >= w && s.Labels[p-w] == l {
			union(int32(p), int32(p-w))
		}
	}
	// A root is its piece's first pixel (unions keep the smaller index).
	size := make([]int32, n)
	for p, l := range s.Labels {
		if l >= 0 {
			size[find(int32(p))]++
		}
	}
	out := make([]int32, n)
	next := int32(0)
	for p, l := range s.Labels {
		if l < 0 {
			out[p] = -1
			continue
		}
		r := find(int32(p))
		if r != int32(p) {
			out[p] = out[r]
			continue
		}
		// p starts a piece: a speck joins the region left of (or else
		// above) p, which is numbered already.
		switch {
		case int(size[p]) < minSize && p%w > 0 && s.Labels[p-1] >= 0:
			out[p] = out[p-1]
		case int(size[p]) < minSize && p >= w && s.Labels[p-w] >= 0:
			out[p] = out[p-w]
		default:
			out[p] = next
			next++
		}
	}
	return &imageseg.Segmentation{W: s.W, H: s.H, N: int(next), Labels: out}
}

func refMerge(lab *photo.Lab, s *imageseg.Segmentation, distance float64, minRegions, maxRegions, minArea int) *imageseg.Segmentation {
	c := refComponents(s, 0)
	speck := float64(len(s.Labels) / max(1, s.N) / 4)
	w := c.W
	n := c.N
	// Sums and, kept beside them, means (ml, ma, mb): the merge loop reads
	// a mean per pair, far more often than a merge changes one.
	type stat struct{ l, a, b, n, ml, ma, mb float64 }
	st := make([]stat, n)
	for p, l := range c.Labels {
		if l < 0 {
			continue
		}
		st[l].l += float64(lab.L[p])
		st[l].a += float64(lab.A[p])
		st[l].b += float64(lab.B[p])
		st[l].n++
	}
	// Adjacent pairs (a < b) from right and down neighbours; a pair
	// repeated along a boundary is appended once per run (the speck
	// passes take repeats; the merge loop gets each pair once).
	var edges [][2]int32
	last := [2]int32{-1, -1}
	add := func(a, b int32) {
		if a == b || a < 0 || b < 0 {
			return
		}
		e := [2]int32{min(a, b), max(a, b)}
		if e != last {
			edges = append(edges, e)
			last = e
		}
	}
	for p, l := range c.Labels {
		if p%w < w-1 {
			add(l, c.Labels[p+1])
		}
		if p+w < len(c.Labels) {
			add(l, c.Labels[p+w])
		}
	}
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(a int32) int32 {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	alive := n
	for k := range st {
		st[k].ml, st[k].ma, st[k].mb = st[k].l/st[k].n, st[k].a/st[k].n, st[k].b/st[k].n
	}
	dist2 := func(a, b int32) float64 {
		sa, sb := &st[a], &st[b]
		dl, da, db := sa.ml-sb.ml, sa.ma-sb.ma, sa.mb-sb.mb
		return dl*dl + da*da + db*db
	}
	join := func(a, b int32) { // b into a
		parent[b] = a
		sa, sb := &st[a], &st[b]
		sa.l += sb.l
		sa.a += sb.a
		sa.b += sb.b
		sa.n += sb.n
		sa.ml, sa.ma, sa.mb = sa.l/sa.n, sa.a/sa.n, sa.b/sa.n
		alive--
	}
	// Specks first, each to its closest neighbour, in passes over the
	// pairs (a speck may join a speck: the next pass takes the union on)
	// until no speck is left.
	to := make([]int32, n)
	toD := make([]float64, n)
	for {
		for i := range to {
			to[i], toD[i] = -1, math.Inf(1)
		}
		live := edges[:0]
		for _, e := range edges {
			a, b := find(e[0]), find(e[1])
			if a == b {
				continue
			}
			live = append(live, [2]int32{a, b})
			if st[a].n >= speck && st[b].n >= speck {
				continue
			}
			d := dist2(a, b)
			for _, ab := range [2][2]int32{{a, b}, {b, a}} {
				if st[ab[0]].n < speck && (d < toD[ab[0]] || (d == toD[ab[0]] && ab[1] < to[ab[0]])) {
					to[ab[0]], toD[ab[0]] = ab[1], d
				}
			}
		}
		edges = live
		merged := false
		for a, b := range to {
			if b < 0 {
				continue
			}
			ra, rb := find(int32(a)), find(b)
			if ra == rb {
				continue
			}
			if ra > rb {
				ra, rb = rb, ra
			}
			join(ra, rb)
			merged = true
		}
		if !merged {
			break
		}
	}
	// Each pair once from here on, so each pass of the merge loop below
	// costs the number of adjacent region pairs.
	seen := make(map[[2]int32]bool, alive*4)
	uniq := edges[:0]
	for _, e := range edges {
		a, b := find(e[0]), find(e[1])
		k := [2]int32{min(a, b), max(a, b)}
		if a != b && !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	edges = uniq
	d2 := distance * distance
	for alive > max(1, minRegions) {
		bestSmall, bestD := false, math.Inf(1)
		bi := -1
		live := edges[:0]
		for _, e := range edges {
			a, b := find(e[0]), find(e[1])
			if a == b {
				continue
			}
			if a > b {
				a, b = b, a
			}
			live = append(live, [2]int32{a, b})
			small := st[a].n < float64(minArea) || st[b].n < float64(minArea)
			d := dist2(a, b)
			if (small && !bestSmall) || (small == bestSmall && d < bestD) {
				bestSmall, bestD, bi = small, d, len(live)-1
			}
		}
		edges = live
		if bi < 0 || (!bestSmall && alive <= maxRegions && bestD >= d2) {
			break
		}
		a, b := edges[bi][0], edges[bi][1]
		join(a, b)
	}
	// Renumber by first pixel.
	id := make([]int32, n)
	for i := range id {
		id[i] = -1
	}
	out := make([]int32, len(c.Labels))
	next := int32(0)
	for p, l := range c.Labels {
		if l < 0 {
			out[p] = -1
			continue
		}
		r := find(l)
		if id[r] < 0 {
			id[r] = next
			next++
		}
		out[p] = id[r]
	}
	return &imageseg.Segmentation{W: c.W, H: c.H, N: int(next), Labels: out}
}

// referencePhotos returns photos to compare the segmenters on: the three
// of testdata/msrc_v2_sample, the development photos when
// $MIMLSTREAM_MSRC_DEV (or the shared copy beside the repository) holds
// them, and synthetic ones of odd sizes with blobs, edges and noise.
func referencePhotos(t *testing.T) map[string]*photo.Image {
	t.Helper()
	out := map[string]*photo.Image{}
	dirs := []string{"../../../testdata/msrc_v2_sample"}
	dev := os.Getenv("MIMLSTREAM_MSRC_DEV")
	if dev == "" {
		dev = "../../../../shared/data/media/msrc_v2_dev"
	}
	if _, err := os.Stat(filepath.Join(dev, "bags.jsonl")); err == nil {
		dirs = append(dirs, dev)
	}
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, "bags.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Image string `json:"image"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, line.Image))
			if err != nil {
				t.Fatal(err)
			}
			img, err := photo.Decode(data, photo.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Join(dir, line.Image)] = img
		}
		f.Close()
	}
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 7))
		w, h := 17+rng.IntN(150), 13+rng.IntN(120)
		img := &photo.Image{W: w, H: h, Pix: make([]uint8, 3*w*h)}
		type blob struct {
			x, y, r float64
			c       [3]int
		}
		var blobs []blob
		for range 2 + rng.IntN(6) {
			blobs = append(blobs, blob{rng.Float64() * float64(w), rng.Float64() * float64(h), 3 + rng.Float64()*float64(min(w, h)/2),
				[3]int{rng.IntN(256), rng.IntN(256), rng.IntN(256)}})
		}
		for y := range h {
			for x := range w {
				c := [3]int{128, 128, 128}
				for _, b := range blobs {
					if math.Hypot(float64(x)-b.x, float64(y)-b.y) < b.r {
						c = b.c
					}
				}
				for k := range 3 {
					img.Pix[3*(y*w+x)+k] = uint8(min(255, max(0, c[k]+rng.IntN(31)-15)))
				}
			}
		}
		out["synthetic"+string(rune('0'+seed))] = img
	}
	return out
}

// TestSegmentersMatchReference runs SLIC, Components and Merge and their
// references (above) on every reference photo: the same labels, pixel for
// pixel.
func TestSegmentersMatchReference(t *testing.T) {
	p := imageseg.DefaultParams()
	photos := referencePhotos(t)
	for name, img := range photos {
		lab := img.ToLab()
		k := p.Superpixels
		if img.W*img.H < 4*k {
			k = max(1, img.W*img.H/40)
		}
		s := imageseg.SLIC(lab, k, p.Compactness, p.Iterations)
		ref := refSLIC(lab, k, p.Compactness, p.Iterations)
		same := func(step string, a, b *imageseg.Segmentation) {
			t.Helper()
			if a.N != b.N || a.W != b.W || a.H != b.H || !slices.Equal(a.Labels, b.Labels) {
				t.Fatalf("%s: %s differs from the reference (%d regions, reference %d)", name, step, a.N, b.N)
			}
		}
		same("SLIC", s, ref)
		for _, minSize := range []int{0, 1, 20, 200} {
			same("Components", imageseg.Components(s, minSize), refComponents(s, minSize))
		}
		minArea := int(p.MinArea * float64(img.W*img.H))
		same("Merge", imageseg.Merge(lab, s, p.MergeDistance, p.MinRegions, p.MaxRegions, minArea),
			refMerge(lab, s, p.MergeDistance, p.MinRegions, p.MaxRegions, minArea))
		same("Merge (no colour merging)", imageseg.Merge(lab, s, 0, 1, 1<<20, 0), refMerge(lab, s, 0, 1, 1<<20, 0))
	}
	t.Logf("%d photos: SLIC, Components and Merge equal to their references", len(photos))
}

// BenchmarkSegment times SLIC and Merge on the three sample photos against
// their references in the same run: compare the ns/op of each pair.
func BenchmarkSegment(b *testing.B) {
	p := imageseg.DefaultParams()
	var labs []*photo.Lab
	for _, img := range referencePhotosB(b) {
		labs = append(labs, img.ToLab())
	}
	minArea := func(l *photo.Lab) int { return int(p.MinArea * float64(l.W*l.H)) }
	b.Run("slic", func(b *testing.B) {
		i := 0
		for b.Loop() {
			imageseg.SLIC(labs[i%len(labs)], p.Superpixels, p.Compactness, p.Iterations)
			i++
		}
	})
	b.Run("slic-reference", func(b *testing.B) {
		i := 0
		for b.Loop() {
			refSLIC(labs[i%len(labs)], p.Superpixels, p.Compactness, p.Iterations)
			i++
		}
	})
	segs := make([]*imageseg.Segmentation, len(labs))
	for i, l := range labs {
		segs[i] = imageseg.SLIC(l, p.Superpixels, p.Compactness, p.Iterations)
	}
	b.Run("merge", func(b *testing.B) {
		i := 0
		for b.Loop() {
			k := i % len(labs)
			imageseg.Merge(labs[k], segs[k], p.MergeDistance, p.MinRegions, p.MaxRegions, minArea(labs[k]))
			i++
		}
	})
	b.Run("merge-reference", func(b *testing.B) {
		i := 0
		for b.Loop() {
			k := i % len(labs)
			refMerge(labs[k], segs[k], p.MergeDistance, p.MinRegions, p.MaxRegions, minArea(labs[k]))
			i++
		}
	})
}

// referencePhotosB is the sample photos of testdata for benchmarks.
func referencePhotosB(b *testing.B) []*photo.Image {
	dir := "../../../testdata/msrc_v2_sample/images"
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var out []*photo.Image
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		img, err := photo.Decode(data, photo.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, img)
	}
	return out
}
