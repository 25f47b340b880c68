package e2e

import (
	"bytes"
	"context"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/picture"
	"github.com/mimlstream/mimlstream/internal/mimlctl"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// The media quickstart's data, in the repository (README.md, "Media in").
const (
	quickPhotos    = "../../testdata/msrc_v2_sample/bags.jsonl"
	quickPhoto     = "../../testdata/msrc_v2_sample/images/12_29_s.jpg"
	quickDocs      = "../../testdata/text_dev_sample/docs.jsonl"
	quickDocFolder = "../../testdata/text_dev_sample/files"
	quickDoc       = "../../testdata/text_dev_sample/files/ng20_0000.txt"
)

// TestMediaQuickstart runs README.md's media quickstart, command by
// command with its flags (plus the test's broker, Redis and key
// prefixes), each command's own code (retrainer fit, ingest and the
// mimlctl subcommands in this process, the annotators as processes), on
// the embedded broker and a real Redis: a model fitted on the photo manifest
// and promoted; one photo ingested and annotated; its annotation tailed
// as JSON and drawn; then documents, on their own topics and registry, a
// model fitted on the document manifest, the document file ingested,
// annotated, tailed and highlighted. The PNG decodes, is the photo with a
// legend beside it, every pixel of a region moved toward its label's
// colour and no other pixel of the photo changed; the HTML holds the
// whole document, each passage's centre on the background of its
// predicted class. Catches any step of the quickstart that no longer
// works: a fit that does not take a manifest or records no featurizer
// (the annotator refuses the bag), an ingest that cannot read the photo
// or the folder, an annotation without its regions, a drawing or
// highlighting that does not match them.
func TestMediaQuickstart(t *testing.T) {
	e := newEnv(t) // the broker has the default topics, as `mimlctl broker` makes them
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	brokers := strings.Join(e.brokers, ",")
	dir := t.TempDir()
	run := func(name string, cmd func(context.Context, service.Env, []string) error, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := cmd(ctx, service.Env{Stdout: &stdout, Stderr: &stderr}, args); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String()
	}
	fit := func(ctx context.Context, env service.Env, args []string) error {
		return retrain.FitCommand(ctx, env, kinds(), args)
	}
	// tailOne is `mimlctl tail TOPIC --json > file`, repeated until the
	// annotator has written the annotation (the README sleeps 2 s).
	tailOne := func(topic, file string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			// Until the annotator has made its topic, tail says so.
			var stdout, stderr bytes.Buffer
			err := mimlctl.TailCommand(ctx, service.Env{Stdout: &stdout, Stderr: &stderr}, []string{topic, "--brokers", brokers, "--json"})
			if out := stdout.String(); err == nil && strings.TrimSpace(out) != "" {
				if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no annotation on %s after 90 s: %v\n%s", topic, err, stderr.String())
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	// Photos.
	out := run("retrainer fit", fit, "--data", quickPhotos, "--model", "orlr", "--promote",
		"--redis", e.redis, "--registry-prefix", e.prefix+":models")
	if !strings.Contains(out, `"featurizer"`) {
		t.Fatalf("the photo model records no featurizer: %s", out)
	}
	a1 := e.startAnnotator("a1", annotatorOpts{listen: true})
	run("ingest", ingest.Command, "--brokers", brokers, "--data", quickPhotos, "--limit", "1", "--progress=false")
	annFile := filepath.Join(dir, "ann.jsonl")
	tailOne("annotations", annFile)
	pngFile := filepath.Join(dir, "photo.png")
	out = run("mimlctl picture", mimlctl.PictureCommand, "--annotation", annFile, "--image", quickPhoto, "--out", pngFile)
	t.Logf("mimlctl picture: %s", strings.TrimSpace(out))
	checkPicture(t, annFile, pngFile)
	_ = a1

	// Documents: their own topics and registry prefix.
	out = run("retrainer fit", fit, "--data", quickDocs, "--model", "orlr", "--param", "l2=1e-4", "--promote",
		"--redis", e.redis, "--registry-prefix", e.prefix+":docs")
	if !strings.Contains(out, `"kind": "orlr+tfidf"`) {
		t.Errorf("the document model is not the IDF-weighted kind: %s", out)
	}
	// The annotator creates its topics, as it does by default.
	e.startAnnotator("d1", annotatorOpts{listen: true, extra: []string{"--registry-prefix", e.prefix + ":docs", "--group", "docs",
		"--topic-bags", "docs", "--topic-annotations", "doc-annotations", "--create-topics=true"}})
	run("ingest", ingest.Command, "--brokers", brokers, "--data", quickDocFolder, "--topic-bags", "docs", "--progress=false")
	docAnn := filepath.Join(dir, "doc.jsonl")
	tailOne("doc-annotations", docAnn)
	htmlFile := filepath.Join(dir, "doc.html")
	out = run("mimlctl passages", mimlctl.PassagesCommand, "--annotation", docAnn, "--text", quickDoc, "--html", htmlFile)
	t.Logf("mimlctl passages:\n%s", out)
	checkHighlight(t, docAnn, htmlFile)
}

// readOne reads the one annotation of file.
func readOne(t *testing.T, file string) wire.AnnotationMessage {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	a, err := wire.DecodeAnnotation(wire.ContentTypeJSON, bytes.TrimSpace(raw))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return a
}

// checkPicture: the PNG is the photo (plus the legend to its right) with
// each region's pixels moved toward its predicted label's colour, and the
// pixels of no region as they were.
func checkPicture(t *testing.T, annFile, pngFile string) {
	t.Helper()
	a := readOne(t, annFile)
	if a.Media == nil || len(a.Regions) == 0 || len(a.Regions) != len(a.InstanceLabels) {
		t.Fatalf("annotation of %s: media %v, %d regions, %d instance labels", a.BagID, a.Media, len(a.Regions), len(a.InstanceLabels))
	}
	raw, err := os.ReadFile(quickPhoto)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := photo.Decode(raw, photo.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the picture is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() <= ph.W || b.Dy() < ph.H {
		t.Fatalf("picture %v for a %dx%d photo: no room for the legend", b, ph.W, ph.H)
	}
	owner := make([]int, ph.W*ph.H)
	for i := range owner {
		owner[i] = -1
	}
	for k, r := range a.Regions {
		if r.Mask == nil || r.Mask.Size != [2]int{ph.H, ph.W} {
			t.Fatalf("region %d: mask %v for a %dx%d photo", k, r.Mask, ph.W, ph.H)
		}
		m, err := r.Mask.Decode()
		if err != nil {
			t.Fatal(err)
		}
		for p, on := range m {
			if on {
				owner[p] = k
			}
		}
	}
	tinted, regionPixels := 0, 0
	for y := range ph.H {
		for x := range ph.W {
			p := y*ph.W + x
			r32, g32, b32, _ := img.At(x, y).RGBA()
			got := [3]int{int(r32 >> 8), int(g32 >> 8), int(b32 >> 8)}
			orig := [3]int{int(ph.Pix[3*p]), int(ph.Pix[3*p+1]), int(ph.Pix[3*p+2])}
			k := owner[p]
			if k < 0 {
				if got != orig {
					t.Fatalf("pixel (%d, %d) of no region changed: %v, photo %v", x, y, got, orig)
				}
				continue
			}
			regionPixels++
			c := picture.Colour(a.InstanceLabels[k])
			col := [3]int{int(c.R), int(c.G), int(c.B)}
			if dist(got, col) < dist(orig, col) || got == col {
				tinted++
			} else if dist(orig, col) > 0 {
				t.Fatalf("pixel (%d, %d) of region %d (label %d): %v is no nearer its colour %v than the photo's %v", x, y, k, a.InstanceLabels[k], got, col, orig)
			}
		}
	}
	if regionPixels == 0 || tinted < regionPixels*9/10 {
		t.Fatalf("%d of %d region pixels tinted", tinted, regionPixels)
	}
	t.Logf("picture of %s: %d regions, %d of %d region pixels tinted toward their label's colour", a.BagID, len(a.Regions), tinted, regionPixels)
}

func dist(a, b [3]int) int {
	d := 0
	for i := range a {
		d += max(a[i]-b[i], b[i]-a[i])
	}
	return d
}

// runRE is one highlighted run of Highlight's page.
var runRE = regexp.MustCompile(`(?s)<span class="l" style="background:[^"]*" title="([^"]*)">(.*?)</span>`)

// checkHighlight: the page's text is the whole document, and the code
// point at each passage's centre is on the background of the passage's
// predicted class (none when it has none).
func checkHighlight(t *testing.T, annFile, htmlFile string) {
	t.Helper()
	a := readOne(t, annFile)
	doc, err := os.ReadFile(quickDoc)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(htmlFile)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(page), "<pre>")
	body, _, ok2 := strings.Cut(body, "</pre>")
	if !ok || !ok2 {
		t.Fatalf("no <pre> in the page:\n%s", page)
	}
	// The class of each code point, from the runs.
	var text strings.Builder
	var class []string
	plain := func(s string) {
		u := html.UnescapeString(s)
		text.WriteString(u)
		for range utf8.RuneCountInString(u) {
			class = append(class, "")
		}
	}
	at := 0
	for _, m := range runRE.FindAllStringSubmatchIndex(body, -1) {
		plain(body[at:m[0]])
		u := html.UnescapeString(body[m[4]:m[5]])
		text.WriteString(u)
		title := html.UnescapeString(body[m[2]:m[3]])
		for range utf8.RuneCountInString(u) {
			class = append(class, title)
		}
		at = m[1]
	}
	plain(body[at:])
	if text.String() != string(doc) {
		t.Fatalf("the page's text is not the document (%d code points, the document %d)", utf8.RuneCountInString(text.String()), utf8.RuneCountInString(string(doc)))
	}
	if len(a.Regions) == 0 || len(a.Regions) != len(a.InstanceLabels) {
		t.Fatalf("annotation of %s: %d regions, %d instance labels", a.BagID, len(a.Regions), len(a.InstanceLabels))
	}
	highlighted := 0
	for k, r := range a.Regions {
		if r.Span == nil || r.Span.End <= r.Span.Start {
			t.Fatalf("passage %d: span %v", k, r.Span)
		}
		centre := (r.Span.Start + r.Span.End - 1) / 2
		want := ""
		if y := a.InstanceLabels[k]; y >= 0 {
			want = a.Classes[y]
			highlighted++
		}
		if class[centre] != want {
			t.Errorf("passage %d [%d, %d): its centre is on %q, its predicted class is %q", k, r.Span.Start, r.Span.End, class[centre], want)
		}
	}
	if highlighted == 0 {
		t.Errorf("no passage of %s has a predicted class: nothing highlighted", a.BagID)
	}
	t.Logf("page of %s: %d passages, %d highlighted", a.BagID, len(a.Regions), highlighted)
}
