package demo

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/stream/sample"
)

const mscv2 = "../../testdata/mscv2/MSCV2.mat"

// TestSummary runs a short demo (MSCV2 once, the dummy kind, a fast
// ingest rate) and holds its summary to the dataset: every bag ingested
// and annotated once, the labeled ones exactly those the ingest's
// label-fraction choice keeps (recomputed here from the bag ids), the
// instances split between the modes as the labels say, every annotated bag
// counted under a version the retrainer made, the first refit promoted for
// want of a current model, and the live quality covering the labeled bags.
func TestSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline in process; skipped with -short")
	}
	ds, err := dataset.Load(mscv2)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: the ingest's choice of labeled bags (seed 1, fraction
	// 0.5) and their instances.
	labeled, labeledInst := 0, 0
	for _, b := range ds.Bags {
		if sample.Unit("1", b.ID) < 0.5 {
			labeled++
			labeledInst += len(b.Instances)
		}
	}

	summary := runSummary(t, []string{"--data", mscv2, "--model", "dummy", "--rate", "2000", "--rounds", "1", "--every", "100", "--min-bags", "80", "--timeout", "2m"})
	ints := func(re string) []int { t.Helper(); return summaryInts(t, summary, re) }
	if got := ints(`ingested +(\d+) bags \((\d+) labeled`); got[0] != len(ds.Bags) || got[1] != labeled {
		t.Errorf("ingested %d bags, %d labeled; want %d, %d", got[0], got[1], len(ds.Bags), labeled)
	}
	ann := ints(`annotated +(\d+) distinct bags \((\d+) redelivered duplicates dropped by id\), (\d+) dead letters`)
	if ann[0] != len(ds.Bags) || ann[2] != 0 {
		t.Errorf("annotated %d distinct bags with %d dead letters; want %d and none", ann[0], ann[2], len(ds.Bags))
	}
	if ind, tr := ints(`instance accuracy inductive +[0-9.]+ over (\d+) instances`)[0], ints(`instance accuracy transductive +[0-9.]+ over (\d+) instances`)[0]; ind != ds.NumInstances()-labeledInst || tr != labeledInst {
		t.Errorf("instances inductive %d, transductive %d; want %d (unlabeled bags) and %d (labeled)", ind, tr, ds.NumInstances()-labeledInst, labeledInst)
	}
	for _, m := range regexp.MustCompile(`instance accuracy \S+ +([0-9.]+)`).FindAllStringSubmatch(summary, -1) {
		if a, err := strconv.ParseFloat(m[1], 64); err != nil || a < 0 || a > 1 {
			t.Errorf("instance accuracy %q is not a fraction", m[1])
		}
	}

	refits := regexp.MustCompile(`(?m)^  refit (v\d+) +on +(\d+) bags \(held out +(\d+)\) in +[0-9.]+s: (promoted|kept current) \((.*)\)$`).FindAllStringSubmatch(summary, -1)
	if len(refits) < 2 {
		t.Fatalf("%d refits, want at least 2 (%d labeled bags, the first refit at 80 and then every 100):\n%s", len(refits), labeled, summary)
	}
	if r := refits[0]; r[4] != "promoted" || r[5] != "no current model" {
		t.Errorf("first refit %q: want promoted for want of a current model", r[0])
	}
	made := map[string]bool{}
	for _, r := range refits {
		made[r[1]] = true
	}
	if byVersion := perVersion(t, summary, "bags", made); byVersion != len(ds.Bags) {
		t.Errorf("bags per model version sum to %d, want %d", byVersion, len(ds.Bags))
	}

	live := 0
	for _, m := range regexp.MustCompile(`(?m)^  live (v\d+) +inductive on +(\d+) labeled bags: Hamming loss ([0-9.]+), average precision ([0-9.]+), instance accuracy ([0-9.]+)`).FindAllStringSubmatch(summary, -1) {
		if !made[m[1]] {
			t.Errorf("live quality of %s, a version the retrainer did not make", m[1])
		}
		n, _ := strconv.Atoi(m[2])
		live += n
	}
	// Every labeled bag is scored live by the version that annotated it;
	// a redelivered bag may be scored twice.
	if live < labeled || (ann[1] == 0 && live != labeled) {
		t.Errorf("live quality over %d labeled bags, want %d (%d redelivered)", live, labeled, ann[1])
	}
}
