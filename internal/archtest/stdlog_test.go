package archtest

import (
	"strings"
	"testing"
)

// TestNoStandardLogPackage: no package of the module writes through the
// standard log package, whose lines (a date and a message) bypass the
// services' structured logs and their level; everything logs with
// log/slog. Dependencies that do (go-redis) are routed through slog where
// the services connect (redisflag.RouteLogs).
func TestNoStandardLogPackage(t *testing.T) {
	checked := 0
	for _, line := range goList(t, "{{.ImportPath}} {{join .Imports \",\"}}", "github.com/mimlstream/mimlstream/...") {
		pkg, imports, _ := strings.Cut(line, " ")
		checked++
		for _, imp := range strings.Split(imports, ",") {
			if imp == "log" {
				t.Errorf("%s imports the standard log package: log with log/slog", pkg)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d packages listed", checked)
	}
	t.Logf("%d packages checked", checked)
}
