package photobag

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadManifest(t *testing.T) {
	lines, dir, err := ReadManifest("../../../testdata/msrc_v2_sample/bags.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[0].ID != "msrc_12_29_s" || lines[0].Image != "images/12_29_s.jpg" || len(lines[0].Regions) != 4 {
		t.Fatalf("%+v", lines[0])
	}
	classes, err := Classes(dir, lines)
	if err != nil || len(classes) != 23 || classes[0] != "building" {
		t.Fatalf("classes %v %v (want classes.json's 23)", classes, err)
	}
	tmp := t.TempDir()
	for name, body := range map[string]string{
		"dup.jsonl":     `{"id":"a","image":"x.jpg"}` + "\n" + `{"id":"a","image":"y.jpg"}`,
		"noimage.jsonl": `{"id":"a"}`,
		"bad.jsonl":     `{"id":`,
	} {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadManifest(p); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	p := filepath.Join(tmp, "labels.jsonl")
	os.WriteFile(p, []byte(`{"image":"x.jpg","labels":["sky","cow"]}`+"\n"+`{"image":"y.jpg","labels":["cow"]}`), 0o644)
	ls, d, err := ReadManifest(p)
	if err != nil || ls[0].ID != "x.jpg" {
		t.Fatalf("%v %v: a line without an id is named by its image", ls, err)
	}
	if c, _ := Classes(d, ls); !slices.Equal(c, []string{"cow", "sky"}) {
		t.Errorf("classes without classes.json: %v", c)
	}
	if !IsPhotoManifest(p) || IsPhotoManifest(filepath.Join(tmp, "bad.jsonl")) {
		t.Error("IsPhotoManifest")
	}
	bags := filepath.Join(tmp, "bags.jsonl")
	os.WriteFile(bags, []byte(`{"id":"b","instances":[[1]]}`), 0o644)
	if IsPhotoManifest(bags) {
		t.Error("a file of bags taken for a photo manifest")
	}
}
