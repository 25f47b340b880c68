package dataset

import (
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset/mat"
)

// TestPhamBagOfNovelInstancesOnly: a bag whose instances all belong to the
// merged novel class has no known class in Y; it loads as labeled with an
// empty label set (not unlabeled), its instances labeled with the last
// class, named NovelClass.
func TestPhamBagOfNovelInstancesOnly(t *testing.T) {
	vars := map[string]*mat.Array{
		"X": cells(1, 2,
			colMajor(2, 2, 1, 2, 3, 4),
			colMajor(2, 1, 5, 6)),
		// Bag 1: instances of class 0 and novel; bag 2: one novel instance.
		"y": cells(1, 2, colMajor(2, 3, 1, 0, 0, 0, 0, 1), colMajor(1, 3, 0, 0, 1)),
		"Y": colMajor(2, 2, 1, 0, 0, 0),
	}
	d, err := phamFromVars("x/HJA/newlabels.mat", vars)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Classes[len(d.Classes)-1]; got != NovelClass || NovelClass != "unknown" {
		t.Fatalf("last class %q, want %q", got, "unknown")
	}
	b := d.Bags[1]
	if b.Labels == nil || len(b.Labels) != 0 {
		t.Errorf("all-novel bag labels %#v, want labeled and empty", b.Labels)
	}
	if len(b.InstanceLabels) != 1 || b.InstanceLabels[0] != 2 {
		t.Errorf("all-novel bag instance labels %v, want [2]", b.InstanceLabels)
	}
	if d.Bags[0].Labels[0] != 0 || len(d.Bags[0].Labels) != 1 {
		t.Errorf("bag 1 labels %v, want [0]", d.Bags[0].Labels)
	}
}
