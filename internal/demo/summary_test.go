package demo

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/models/catalog"
)

// runSummary runs the demo with args and returns its summary, what it
// prints after "summary after"; a failed run or one without a summary
// fails the test, with what it printed.
func runSummary(t *testing.T, args []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := Run(t.Context(), catalog.New(), &stdout, &stderr, args); err != nil {
		t.Fatalf("demo %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, &stdout, &stderr)
	}
	out := stdout.String()
	t.Logf("demo output:\n%s", out)
	_, summary, ok := strings.Cut(out, "\nsummary after ")
	if !ok {
		t.Fatalf("no summary in the output:\n%s", out)
	}
	return summary
}

// summaryInts returns the integers the groups of re match in summary,
// which must match it.
func summaryInts(t *testing.T, summary, re string) []int {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("summary lacks %s:\n%s", re, summary)
	}
	var n []int
	for _, s := range m[1:] {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		n = append(n, v)
	}
	return n
}

// perVersion returns the sum of the summary's line "<what> per model
// version: v1:N v2:M ...", each count checked to be of a version in made.
func perVersion(t *testing.T, summary, what string, made map[string]bool) int {
	t.Helper()
	line := regexp.MustCompile(what + ` per model version: (.*)`).FindStringSubmatch(summary)
	if line == nil {
		t.Fatalf("no %s per model version:\n%s", what, summary)
	}
	sum := 0
	for _, f := range strings.Fields(line[1]) {
		v, n, _ := strings.Cut(f, ":")
		c, err := strconv.Atoi(n)
		if err != nil || !made[v] {
			t.Errorf("%s per model version %q: %q is not a count of a version the retrainer made (%v)", what, line[1], f, made)
		}
		sum += c
	}
	return sum
}
