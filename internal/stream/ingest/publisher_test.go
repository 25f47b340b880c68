package ingest

import (
	"fmt"
	"testing"
)

func TestKeepLabelsIsStableAndProportional(t *testing.T) {
	n := 20000
	p := &Publisher{cfg: PublisherConfig{LabelFraction: 0.3, Seed: 7}}
	kept := 0
	for i := range n {
		if p.KeepLabels(fmt.Sprintf("bag-%d", i)) {
			kept++
		}
	}
	if d := kept - 3*n/10; d < -324 || d > 324 { // sd 64.8
		t.Errorf("label fraction 0.3 kept %d of %d", kept, n)
	}
}
