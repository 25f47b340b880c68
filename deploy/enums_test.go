package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// declaredLabelValues are the values a selector of the dashboard or the
// rules may match on a dead-letter label: the lists wire declares.
func declaredLabelValues() map[string][]string {
	var reasons []string
	for _, r := range wire.Reasons() {
		reasons = append(reasons, string(r))
	}
	return map[string][]string{"reason": reasons, "stage": wire.Stages()}
}

// undeclaredLabelValues returns the values an expression matches on a
// reason or stage label that wire does not declare (an alternative of a
// regular expression counts on its own), and how many such values it read.
func undeclaredLabelValues(expr string) (bad []string, checked int, err error) {
	e, err := promQL().ParseExpr(expr)
	if err != nil {
		return nil, 0, err
	}
	declared := declaredLabelValues()
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			known, ok := declared[m.Name]
			if !ok {
				continue
			}
			values := []string{m.Value}
			if m.Type == labels.MatchRegexp || m.Type == labels.MatchNotRegexp {
				values = strings.Split(m.Value, "|")
			}
			for _, v := range values {
				checked++
				if !slices.Contains(known, v) {
					bad = append(bad, m.Name+"="+v)
				}
			}
		}
		return nil
	})
	return bad, checked, nil
}

// TestDashboardAndRulesNameDeclaredReasons: every dead-letter reason or
// stage the alert rules and the dashboard select is one wire declares
// (wire.Reasons, wire.Stages, which the schemas and the status page are
// held to as well), so a renamed reason cannot leave an alert that never
// fires.
func TestDashboardAndRulesNameDeclaredReasons(t *testing.T) {
	checked := 0
	for _, u := range append(ruleExprs(t), dashboardExprs(t)...) {
		bad, n, err := undeclaredLabelValues(u.expr)
		if err != nil {
			t.Errorf("%s: %v", u.where, err)
		}
		if len(bad) > 0 {
			t.Errorf("%s selects %v, which wire does not declare:\n%s", u.where, bad, u.expr)
		}
		checked += n
	}
	if checked == 0 {
		t.Error("no rule or panel selects a reason or stage: the check checked nothing")
	}
	t.Logf("%d reason and stage values checked against wire's lists", checked)
	// The check can fail: a misspelt reason and an undeclared alternative
	// are found.
	bad, _, err := undeclaredLabelValues(`sum(rate(mimlstream_annotator_dead_letters_total{reason="dimensions"}[5m])) + sum(rate(x{stage=~"ingest|train"}[5m]))`)
	if err != nil || !slices.Equal(bad, []string{"reason=dimensions", "stage=train"}) {
		t.Errorf("misspelt values: found %v (%v), want reason=dimensions and stage=train", bad, err)
	}
}
