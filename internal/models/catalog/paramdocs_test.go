package catalog_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
)

const (
	modelsDoc = "../../../docs/models.md"
	// The markers around the generated tables in docs/models.md.
	paramsBegin = "<!-- parameter tables: generated from the kinds' declarations; MIMLSTREAM_UPDATE_DOCS=1 go test ./internal/models/catalog -run TestParamTablesInDocs rewrites them -->"
	paramsEnd   = "<!-- end of the generated parameter tables -->"
)

// weightedSection heads the table of the keys every Weighted kind
// (KIND+tfidf) adds to its inner kind's, written once.
const weightedSection = "KIND" + tfidf.Suffix

// paramTables renders every catalog kind's parameter table, in name order,
// then the keys a Weighted kind adds to its inner kind's.
func paramTables() string {
	reg := catalog.New()
	var b strings.Builder
	var dense []string
	for _, name := range reg.Names() {
		if strings.HasSuffix(name, tfidf.Suffix) {
			continue
		}
		k, _ := reg.Lookup(name)
		b.WriteString("\n### `" + name + "`\n\n" + k.Description + "\n\n" + models.MarkdownTable(k.Params))
		if !k.Sparse {
			dense = append(dense, "`"+name+"`")
		}
	}
	b.WriteString("\n### `" + weightedSection + "`\n\nEvery kind above, fitted on documents' passages weighted by the IDF of its training passages (kept in the model): " +
		"the kind the retrainer fits on bags of the text featurizer. Its keys are the inner kind's and these:\n\n" + models.MarkdownTable(tfidf.Params()) +
		"\nThe kinds without a sparse path (" + strings.Join(dense, ", ") + ") are fitted by default on the passages' coordinates in a latent semantic basis " +
		"learned from the same weighted passages and kept in the model too (`" + tfidf.ParamRank + "`); the others take the sparse passages as they are unless `" + tfidf.ParamRank + "` is given.\n")
	return b.String() + "\n"
}

// TestParamTablesInDocs holds the parameter tables of docs/models.md to
// the kinds' declarations (models.Decls, through Kind.Params), from which
// `retrainer eval --list-params` prints too: a key, type, range, default
// or doc changed in the code and not in the page fails here.
// MIMLSTREAM_UPDATE_DOCS=1 rewrites the page's tables instead.
func TestParamTablesInDocs(t *testing.T) {
	raw, err := os.ReadFile(modelsDoc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	head, rest, ok1 := strings.Cut(page, paramsBegin+"\n")
	got, tail, ok2 := strings.Cut(rest, paramsEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the markers of the generated parameter tables:\n%s\n%s", modelsDoc, paramsBegin, paramsEnd)
	}
	want := paramTables()
	if os.Getenv("MIMLSTREAM_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(modelsDoc, []byte(head+paramsBegin+"\n"+want+paramsEnd+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s's parameter tables differ from the declarations at line %d of the tables:\n page: %s\n code: %s\n(MIMLSTREAM_UPDATE_DOCS=1 go test ./internal/models/catalog -run TestParamTablesInDocs rewrites them)", modelsDoc, i+1, g, w)
			}
		}
	}
	// Every declared key of every kind is in the page, under its kind.
	// A Weighted kind's keys are under its inner kind or under KIND+tfidf.
	sectionOf := func(name string) string {
		_, section, _ := strings.Cut(got, "### `"+name+"`")
		section, _, _ = strings.Cut(section, "\n### ")
		return section
	}
	for _, name := range catalog.New().Names() {
		k, _ := catalog.New().Lookup(name)
		inner, weighted := strings.CutSuffix(name, tfidf.Suffix)
		section := sectionOf(inner)
		if weighted {
			section += sectionOf(weightedSection)
		}
		for _, s := range k.Params {
			if !strings.Contains(section, "| `"+s.Name+"` |") {
				t.Errorf("%s: no row for %s's %s", modelsDoc, name, s.Name)
			}
		}
	}
}
