package mimlctl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/media/picture"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// PictureCommand draws an annotated photo: the annotation's regions (their
// RLE masks, as the bag carried them) tinted by the labels it gives them,
// with a legend of the classes and the bag's labels.
func PictureCommand(ctx context.Context, env service.Env, args []string) error {
	fs := cli.NewFlagSet("mimlctl-picture", `Usage: mimlctl picture --annotation FILE --image PHOTO --out PNG

Draws the annotated photo: each region of the annotation (its mask, as the
bag carried it) tinted and outlined in the colour of its predicted label,
and a legend of the labels and of the bag's labels. FILE holds one
annotation as JSON (a line of 'mimlctl tail annotations --json'; with
several lines, --bag picks the annotation of that bag). The photo must be
the one the annotation names: its SHA-256 is checked against the
annotation's media.`, env.Stderr)
	annotation := fs.String("annotation", "", "annotation `file` (JSON, one a line)")
	bag := fs.String("bag", "", "the bag `id` to draw when the file holds several annotations (default: the last)")
	imagePath := fs.String("image", "", "the photo `file` the annotation's media names")
	out := fs.String("out", "", "PNG `file` to write")
	if _, err := parseArgs(fs, args, nil); err != nil {
		return err
	}
	if *annotation == "" || *imagePath == "" || *out == "" {
		return cli.Usagef("picture needs --annotation, --image and --out")
	}
	a, err := readAnnotation(*annotation, *bag)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(*imagePath)
	if err != nil {
		return err
	}
	pic, err := Picture(a, raw)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := png.Encode(f, pic); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", *out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	fmt.Fprintf(env.Stdout, "%s: bag %s, %d regions\n", *out, a.BagID, len(a.Regions))
	return nil
}

// readAnnotation returns the annotation of bag id in path (the last one
// when id is "").
func readAnnotation(path, id string) (*wire.AnnotationMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	var found *wire.AnnotationMessage
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var a wire.AnnotationMessage
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if id == "" || a.BagID == id {
			found = &a
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no annotation of bag %q", path, id)
	}
	return found, nil
}

// Picture draws annotation a on the photo whose bytes are raw
// (picture.FromAnnotation).
func Picture(a *wire.AnnotationMessage, raw []byte) (*image.RGBA, error) {
	return picture.FromAnnotation(a, raw)
}
