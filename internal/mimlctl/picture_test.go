package mimlctl

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestPictureCommand draws testdata's ducks from an annotation whose
// regions are the featurizer's: the PNG has the photo's height and a
// legend beside it (the tinting is picture's test); a photo other than the
// annotation's media, an annotation without regions and a missing flag
// are refused.
func TestPictureCommand(t *testing.T) {
	const photoPath = "../../testdata/msrc_v2_sample/images/12_29_s.jpg"
	raw, err := os.ReadFile(photoPath)
	if err != nil {
		t.Fatal(err)
	}
	img, err := photo.Decode(raw, photo.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := imagefeat.New(imagefeat.DefaultParams())
	res, err := f.Featurize(img)
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]int, len(res.Regions))
	for k := range labels {
		labels[k] = k % 2
	}
	md := media.Identify(raw, "images/12_29_s.jpg", "image/jpeg")
	a := wire.AnnotationMessage{SchemaVersion: 1, BagID: "msrc_12_29_s", Model: "orlr", ModelVersion: "v1", Mode: "transductive",
		Classes: []string{"bird", "grass"}, InstanceLabels: labels, BagLabels: []int{0, 1}, BagScores: []float64{1, 1},
		Media: &md, Regions: res.Regions}
	dir := t.TempDir()
	line, _ := json.Marshal(a)
	annPath := filepath.Join(dir, "ann.jsonl")
	if err := os.WriteFile(annPath, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.png")
	var stdout, stderr bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	if err := PictureCommand(context.Background(), env, []string{"--annotation", annPath, "--image", photoPath, "--out", out}); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	pic, err := png.Decode(fh)
	if err != nil {
		t.Fatal(err)
	}
	if b := pic.Bounds(); b.Dy() < img.H || b.Dx() <= img.W {
		t.Fatalf("picture %v for a %dx%d photo", b, img.W, img.H)
	}
	if !strings.Contains(stdout.String(), "msrc_12_29_s") {
		t.Errorf("stdout %q", stdout.String())
	}
	other, _ := os.ReadFile("../../testdata/msrc_v2_sample/images/5_12_s.jpg")
	if _, err := Picture(&a, other); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("another photo: %v", err)
	}
	a.Regions = nil
	if _, err := Picture(&a, raw); err == nil {
		t.Error("an annotation without regions drawn")
	}
	if err := PictureCommand(context.Background(), env, []string{"--image", photoPath}); err == nil {
		t.Error("missing --annotation accepted")
	}
}
