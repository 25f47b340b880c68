package annotate

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestNextContract: the state machine of the input contract across swaps.
// Faults it catches: a first model taken for a change; a compatible refit
// flagged; a change forgotten at the next swap of the same contract (a
// refit on the forced data); a rollback to the baseline's contract left
// flagged; a third contract losing the original baseline.
func TestNextContract(t *testing.T) {
	m := func(v string, dim int, classes ...string) featurestore.VersionMeta {
		return featurestore.VersionMeta{Version: v, Dim: dim, Classes: classes}
	}
	a1, a2 := m("v1", 48, "a", "b"), m("v2", 48, "a", "b")
	b3, b4 := m("v3", 166, "pos"), m("v4", 166, "pos")
	c5 := m("v5", 48, "a", "b", "c")
	changed := func(base, served featurestore.VersionMeta) *contractChange {
		return &contractChange{baseline: base, served: served, err: featurestore.Compatible(base, served)}
	}
	for _, tc := range []struct {
		name string
		cur  *contractChange
		old  *featurestore.VersionMeta
		next featurestore.VersionMeta
		want *contractChange
	}{
		{"first model", nil, nil, a1, nil},
		{"compatible refit", nil, &a1, a2, nil},
		{"forced over another dimension", nil, &a2, b3, changed(a2, b3)},
		{"refit on the forced contract keeps the change", changed(a2, b3), &b3, b4, changed(a2, b4)},
		{"rollback to the baseline's contract clears it", changed(a2, b4), &b4, a1, nil},
		{"a third contract keeps the first baseline", changed(a2, b3), &b3, c5, changed(a2, c5)},
		{"other classes, same dimension", nil, &a1, c5, changed(a1, c5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nextContract(tc.cur, tc.old, tc.next)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("nextContract = %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if got.baseline.Version != tc.want.baseline.Version || got.served.Version != tc.want.served.Version ||
				!errors.Is(got.err, featurestore.ErrIncompatible) || got.err.Error() != tc.want.err.Error() {
				t.Errorf("nextContract = {%s %s %v}, want {%s %s %v}", got.baseline.Version, got.served.Version, got.err,
					tc.want.baseline.Version, tc.want.served.Version, tc.want.err)
			}
		})
	}
}

// TestForcedIncompatibleModelIsLoud promotes, as `mimlctl models promote
// --force` does, a model of another input dimension over the one served:
// the annotator swaps to it and keeps serving (/readyz 200), and says so
// at ERROR, in the model_contract_changed gauge and on /readyz; bags of the
// old dimension are dead-lettered, not lost or stalled. A rollback to the
// old contract clears every signal. It fails if the swap is silent, if
// the annotator stops serving, or if the warning outlives the rollback.
func TestForcedIncompatibleModelIsLoud(t *testing.T) {
	h := newHarness(t)
	ctx, cancel, ds, v1 := h.withModel(30)
	rec, prov, obs := observed()
	a, done := h.startAnnotator(ctx, "a1", func(c *AnnotatorConfig) {
		obs(c)
		c.PollInterval = 50 * time.Millisecond
	})
	streamtest.WaitFor(t, 10*time.Second, "annotator ready", a.Ready)
	gauge := func() string {
		return grepLines(metrics(prov.MetricsHandler), "mimlstream_annotator_model_contract_changed{")
	}
	if g := gauge(); !strings.HasSuffix(g, "} 0") {
		t.Errorf("contract gauge before any change: %q, want 0", g)
	}

	// The same bags with a third feature: another input dimension.
	wide := &mil.Dataset{Name: "wide", Classes: ds.Classes, Dim: 3}
	for _, b := range ds.Bags {
		w := b
		w.Instances = nil
		for _, x := range b.Instances {
			w.Instances = append(w.Instances, append(append([]float64(nil), x...), 1))
		}
		wide.Bags = append(wide.Bags, w)
	}
	v2 := h.publishModel(wide, nil) // PublishModel forces the promotion past the guard
	streamtest.WaitFor(t, 5*time.Second, "forced model served", func() bool { return a.ModelVersion() == v2 })
	code, body := readyz(a)
	if code != http.StatusOK || !strings.HasPrefix(body, "ok "+v2+"\n") || !strings.Contains(body, "WARNING: input contract changed") ||
		!strings.Contains(body, "input dimension 3, "+v1+" has 2") {
		t.Errorf("/readyz after the forced swap: %d %q", code, body)
	}
	// The model is served before the change is logged: wait for the line.
	streamtest.WaitFor(t, 5*time.Second, "contract change logged", func() bool { return rec.count(slog.LevelError, "input contract changed") > 0 })
	if n := rec.count(slog.LevelError, "input contract changed"); n != 1 {
		t.Errorf("contract change logged %d times at ERROR, want once", n)
	}
	if g := gauge(); !strings.HasSuffix(g, "} 1") {
		t.Errorf("contract gauge after the forced swap: %q, want 1", g)
	}

	// Bags of the old dimension go to dead letters with their reason; the
	// annotator does not stall on them.
	h.publish(ctx, ingest.PublisherConfig{}, ds, ds.Bags[:5])
	_, dead := h.collect(ctx, 5, 20*time.Second)
	if len(dead) != 5 {
		t.Fatalf("%d dead letters for 5 bags of the old dimension", len(dead))
	}
	for _, d := range dead {
		if d.Reason != "dimension" {
			t.Errorf("dead letter reason %q (%s), want dimension", d.Reason, d.Error)
		}
	}

	back, err := h.reg.Rollback(ctx)
	if err != nil || back != v1 {
		t.Fatalf("rollback = %s, %v; want %s", back, err, v1)
	}
	streamtest.WaitFor(t, 5*time.Second, "rollback served", func() bool { return a.ModelVersion() == v1 })
	if code, body := readyz(a); code != http.StatusOK || body != fmt.Sprintf("ok %s\n", v1) {
		t.Errorf("/readyz after the rollback: %d %q", code, body)
	}
	if g := gauge(); !strings.HasSuffix(g, "} 0") {
		t.Errorf("contract gauge after the rollback: %q, want 0", g)
	}
	stopAnnotator(t, cancel, done)
}
