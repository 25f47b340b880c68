package ovr

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// Data is a training set prepared for the one-vs-rest trainers: the labeled
// bags' instances transformed by Scaler into one row list, each bag a list of row
// indices.
type Data struct {
	Scaler Scaler
	// Rows holds the transformed instances of all labeled bags.
	Rows [][]float64
	// Sparse holds them instead of Rows when the data were prepared by
	// PrepareSparse.
	Sparse []mil.SparseVec
	// Bags[i] lists the rows of labeled bag i, in order.
	Bags [][]int
	// Labels[i] is the label set of labeled bag i.
	Labels [][]int
	// BagIndex[i] is the index in the dataset of labeled bag i.
	BagIndex []int
}

// Prepare validates train, drops unlabeled bags (they carry no
// training signal for these supervised-at-bag-level models) and transforms
// the features with a scaler of the given mode fitted on the remaining
// instances. Invalid bags yield an error wrapping models.ErrBadInput.
func Prepare(train *mil.Dataset, mode Scaling) (*Data, error) {
	if train == nil || train.Dim <= 0 {
		return nil, fmt.Errorf("%w: dataset has no dimension", models.ErrBadInput)
	}
	if len(train.Classes) == 0 {
		return nil, fmt.Errorf("%w: dataset has no classes", models.ErrBadInput)
	}
	d := &Data{}
	var raw [][]float64
	for i := range train.Bags {
		b := &train.Bags[i]
		if err := b.Validate(train.Dim, len(train.Classes)); err != nil {
			return nil, fmt.Errorf("%w: %w", models.ErrBadInput, err)
		}
		if !b.Labeled() {
			continue
		}
		ids := make([]int, len(b.Instances))
		for j, x := range b.Instances {
			ids[j] = len(raw)
			raw = append(raw, x)
		}
		d.Bags = append(d.Bags, ids)
		d.Labels = append(d.Labels, b.Labels)
		d.BagIndex = append(d.BagIndex, i)
	}
	if len(d.Bags) == 0 {
		return nil, fmt.Errorf("%w: no labeled bag to train on", models.ErrBadInput)
	}
	var err error
	if d.Scaler, err = FitScaler(mode, raw, train.Dim); err != nil {
		return nil, err
	}
	d.Rows = make([][]float64, len(raw))
	for i, x := range raw {
		d.Rows[i] = d.Scaler.Apply(make([]float64, train.Dim), x)
	}
	return d, nil
}

// Positive returns, for class c, whether each labeled bag carries c.
func (d *Data) Positive(c int) []bool {
	pos := make([]bool, len(d.Labels))
	for i, ls := range d.Labels {
		for _, l := range ls {
			if l == c {
				pos[i] = true
				break
			}
		}
	}
	return pos
}

// Parallel runs fn(0..n−1) on at most workers goroutines (≤ 0: all cores)
// and returns the first error; after an error no new call starts. Results
// must be written by index so that they do not depend on scheduling.
func Parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel(err) })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// Seed derives an independent 64-bit stream seed from a base seed and a
// path of indices (class, fold, restart...) with the SplitMix64 finaliser,
// so every job's randomness depends only on its identity, never on which
// goroutine runs it.
func Seed(base int64, path ...int) uint64 {
	z := uint64(base)
	for _, p := range path {
		z += 0x9e3779b97f4a7c15 * (uint64(p) + 1)
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
	}
	return z
}
