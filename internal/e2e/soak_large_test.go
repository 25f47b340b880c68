package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// largeBagInstances makes a bag's message about 0.92 MiB (961,378 bytes),
// under the 1 MiB message limit: MSCV2's 48-dim instances take about 6
// bytes per feature in JSON.
const largeBagInstances = 3300

// writeLarge writes n labeled bags of largeBagInstances instances each,
// cycling through MSCV2's instances, as JSON lines with ids "tag-i".
func writeLarge(w io.Writer, ds *mil.Dataset, tag string, n int) error {
	var pool [][]float64
	for _, b := range ds.Bags {
		pool = append(pool, b.Instances...)
	}
	for i := range n {
		src := ds.Bags[i%len(ds.Bags)]
		b := mil.Bag{ID: fmt.Sprintf("%s-%d", tag, i), Labels: src.Labels}
		for k := range largeBagInstances {
			b.Instances = append(b.Instances, pool[(i*largeBagInstances+k)%len(pool)])
		}
		raw, err := json.Marshal(wire.NewBagMessage(&b, ds.Name, ds.Dim, ds.Classes, false))
		if err != nil {
			return err
		}
		if _, err := w.Write(append(raw, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// TestSoakLargeBags streams bags of about 0.92 MiB each (the message limit
// is 1 MiB), every one labeled so that it also reaches the retrainer's
// window, for MIMLSTREAM_SOAK_DURATION (1 min) at 8 bags/s, and samples
// the RSS of the annotator, the retrainer and ingest every 5 s. Memory is
// bounded in bytes, not bags: the retrainer's window by --window-bytes
// (64 MiB here, so that the soak fills it in seconds and then drops the
// oldest), the annotator's batches by --max-batch-bytes; so the RSS of
// each must stay flat once the window is full. Run with `make soak`.
func TestSoakLargeBags(t *testing.T) {
	dur := soakDuration(t)
	e := newEnv(t)
	ds, blob := mscv2Model(t)
	e.promote(blob)
	seen := e.countIDs(t.Context())
	ann := e.startAnnotator("large", annotatorOpts{extra: []string{"--log-level", "info"}})
	ret := e.spawn("retrainer", "large", e.retrainerArgs(1000000, "", "--window-bytes", fmt.Sprint(64<<20), "--log-level", "info"))
	streamtest.WaitFor(t, 60*time.Second, "annotator serving", func() bool {
		return strings.Contains(ann.logText(), "consuming")
	})
	const rate = 8
	n := int(rate * dur.Seconds())
	ing := e.ingest(t, "large", rate, func(w io.Writer) error { return writeLarge(w, ds, "large", n) })
	samples := sampleRSS(t, ing, dur+5*time.Minute, map[string]*annotator{"annotator": ann, "retrainer": ret, "ingest": ing})
	seen.wait(t, "large", n, 5*time.Minute)
	checkFlat(t, samples)
	ids, dups := seen.count("large")
	t.Logf("%d bags of about 0.92 MiB published and annotated (%d annotations redelivered)", ids, dups)
}
