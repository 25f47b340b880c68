package text

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
)

// Classes is the class vocabulary of a manifest's documents, which every
// door that reads the manifest (ingest, retrainer fit and eval) must agree
// on, a model's classes being checked against its bags': classes.json
// beside the manifest ({"classes": [...]}) when there is one, else the
// sorted labels of the entries and of their ground-truth passages.
func Classes(dir string, entries []Entry) []string {
	if b, err := os.ReadFile(filepath.Join(dir, "classes.json")); err == nil {
		var c struct {
			Classes []string `json:"classes"`
		}
		if json.Unmarshal(b, &c) == nil && len(c.Classes) > 0 {
			return c.Classes
		}
	}
	out := []string{}
	for _, e := range entries {
		for _, l := range e.Labels {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
		for _, p := range e.Passages {
			if !slices.Contains(out, p.Label) {
				out = append(out, p.Label)
			}
		}
	}
	slices.Sort(out)
	return out
}
