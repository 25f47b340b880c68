package retrain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// hookStore runs afterPut once a refit's candidate is stored, that is
// after the refit compared it with current and before it promotes it: the
// moment an operator or another retrainer acts in the adversarial runs.
type hookStore struct {
	*featurestore.Registry
	afterPut func()
}

func (s *hookStore) Put(ctx context.Context, blob []byte, meta featurestore.VersionMeta) (featurestore.VersionMeta, error) {
	m, err := s.Registry.Put(ctx, blob, meta)
	if err == nil && s.afterPut != nil {
		f := s.afterPut
		s.afterPut = nil
		f()
	}
	return m, err
}

// TestRefitNeverUndoesAnotherPromotion: a refit promotes its candidate
// only while current is still the version it was compared with. An
// operator's rollback, or another retrainer's promotion, made while it
// fitted stands; the candidate stays stored, unpromoted, and the result
// says why.
func TestRefitNeverUndoesAnotherPromotion(t *testing.T) {
	ds := streamtest.SmallDataset(60)
	cases := []struct {
		name string
		// act runs between the refit's comparison and its promotion and
		// returns the version that must be current afterwards.
		act func(t *testing.T, h *harness, rejected string) string
	}{
		{"operator rolls back", func(t *testing.T, h *harness, rejected string) string {
			back, err := h.reg.Rollback(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return back
		}},
		{"second retrainer promotes", func(t *testing.T, h *harness, _ string) string {
			other := h.retrainer(func(c *RetrainerConfig) { c.Margin = 1 })
			fill(t, other, ds)
			res, err := other.Refit(context.Background())
			if err != nil || !res.Promoted {
				t.Fatalf("second retrainer: %+v, %v", res, err)
			}
			return res.Version
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			h.publishModel(ds, models.Params{"iters": "1"})
			rejected := h.publishModel(ds, models.Params{"iters": "2"})
			var want string
			st := &hookStore{Registry: h.reg}
			st.afterPut = func() { want = tc.act(t, h, rejected) }
			r := h.retrainer(func(c *RetrainerConfig) { c.Store = st; c.Margin = 1 })
			fill(t, r, ds)
			res, err := r.Refit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.reg.Alias(ctx, featurestore.AliasCurrent)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("refit compared %s with %s (parent %s); meanwhile current became %s; after the refit current is %s, promoted=%v: %s",
				res.Version, rejected, res.Parent, want, got, res.Promoted, res.Reason)
			if got != want || res.Promoted {
				t.Errorf("current %s, refit promoted=%v; want %s to stand and the candidate %s dropped", got, res.Promoted, want, res.Version)
			}
			if _, _, err := h.reg.Get(ctx, res.Version); err != nil {
				t.Errorf("dropped candidate %s not kept: %v", res.Version, err)
			}
		})
	}
}

// fill puts every bag of ds in r's window.
func fill(t *testing.T, r *Retrainer, ds *mil.Dataset) {
	t.Helper()
	for i := range ds.Bags {
		raw, err := json.Marshal(wire.NewBagMessage(&ds.Bags[i], "toy", ds.Dim, ds.Classes, false))
		if err != nil {
			t.Fatal(err)
		}
		r.add(context.Background(), kafka.Message{Key: []byte(ds.Bags[i].ID), Value: raw, Offset: int64(i)})
	}
}

// TestFitPromoteIsGuarded: `retrainer fit --promote` goes through the
// registry's contract guard: a 166-dimension model (musk1) is not put over
// a current 48-dimension one (MSCV2), whose annotators would dead-letter
// every bag; --force is the way past.
func TestFitPromoteIsGuarded(t *testing.T) {
	addr, rdb, _ := streamtest.StartRedis(t)
	kinds := models.NewRegistry(streamtest.CentroidKind())
	fit := func(data string, extra ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		env := service.Env{Stdout: &stdout, Stderr: &stderr}
		args := append([]string{"--redis", addr, "--registry-prefix", "g", "--data", data, "--model", streamtest.KindName,
			"--param", "iters=1", "--promote"}, extra...)
		err := FitCommand(context.Background(), env, kinds, args)
		return stdout.String() + stderr.String(), err
	}
	if out, err := fit("../../../testdata/mscv2/MSCV2.mat"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	reg := featurestore.NewRegistry(rdb, "g")
	_, err := fit("../../../testdata/musk1/musk1.data")
	_, cur, cerr := reg.Current(context.Background())
	if cerr != nil {
		t.Fatal(cerr)
	}
	t.Logf("fit --promote musk1 (166-dim) over MSCV2 (48-dim): err=%v; current %s has dim %d", err, cur.Version, cur.Dim)
	if !errors.Is(err, featurestore.ErrIncompatible) || cur.Dim != 48 {
		t.Errorf("fit --promote of a 166-dimension model: %v, current dim %d; want ErrIncompatible and 48", err, cur.Dim)
	}
	if out, err := fit("../../../testdata/musk1/musk1.data", "--force"); err != nil {
		t.Fatalf("--force: %v\n%s", err, out)
	}
	if _, cur, _ := reg.Current(context.Background()); cur.Dim != 166 {
		t.Errorf("--force: current dim %d, want 166", cur.Dim)
	}
}
