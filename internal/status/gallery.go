package status

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/mediaroot"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/picture"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// DefaultGallery is how many annotated media the page shows by default.
const DefaultGallery = 12

// GalleryItem is one annotated photo or document of the page's gallery.
type GalleryItem struct {
	BagID        string    `json:"bag_id"`
	Kind         string    `json:"kind"` // "photo" or "text"
	Model        string    `json:"model"`
	ModelVersion string    `json:"model_version"`
	Mode         string    `json:"mode"`
	AnnotatedAt  time.Time `json:"annotated_at"`
	URI          string    `json:"uri,omitempty"`
	SHA256       string    `json:"sha256"`
	// BagLabels are the predicted labels of the bag, by name.
	BagLabels []string `json:"bag_labels"`
	// Regions are the instances: a photo's regions or a document's
	// passages, each with its predicted label and its best scores.
	Regions []GalleryRegion `json:"regions"`
	// Image is the path of the photo's picture on this server ("" for a
	// document, or when the photo cannot be drawn: Error says why).
	Image string `json:"image,omitempty"`
	// Pieces are the document cut at every passage boundary, for a
	// document whose text was found under the media root.
	Pieces []TextPiece `json:"pieces,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// GalleryRegion is one instance of a gallery item.
type GalleryRegion struct {
	Label  string       `json:"label"` // "" when no class was predicted
	Colour string       `json:"colour"`
	Scores []LabelScore `json:"scores,omitempty"`
	BBox   *[4]int      `json:"bbox,omitempty"`
	Span   *media.Span  `json:"span,omitempty"`
}

// LabelScore is a class and its score for an instance.
type LabelScore struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// TextPiece is a stretch of a document covered by the same passages
// (indices into Regions; none between passages).
type TextPiece struct {
	Text     string `json:"text"`
	Passages []int  `json:"passages"`
}

// topScores is how many of an instance's class scores the page lists.
const topScores = 3

// gallery keeps the latest annotations of media bags (newest last) and
// the media root their photos and documents are read from.
type gallery struct {
	root *mediaroot.Root // nil: no media root
	size int

	mu    sync.Mutex
	items []*wire.AnnotationMessage
	// pngs caches the pictures of the kept photos, texts the kept
	// documents' text, by bag id and version (pictureKey).
	pngs  map[string][]byte
	texts map[string]string
}

func newGallery(root string, size int) *gallery {
	if size <= 0 {
		size = DefaultGallery
	}
	g := &gallery{size: size, pngs: map[string][]byte{}, texts: map[string]string{}}
	if root != "" {
		g.root = mediaroot.New(root)
	}
	return g
}

// add keeps the annotation if it is of a media bag, replacing an earlier
// one of the same bag (a redelivery, or a later model's).
func (g *gallery) add(value []byte) {
	// Most annotations are of vectors: skip them before decoding.
	if !bytes.Contains(value, []byte(`"regions"`)) {
		return
	}
	var a wire.AnnotationMessage
	if err := json.Unmarshal(value, &a); err != nil || a.Media == nil || len(a.Regions) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.items = slices.DeleteFunc(g.items, func(b *wire.AnnotationMessage) bool { return b.BagID == a.BagID })
	g.items = append(g.items, &a)
	if len(g.items) > g.size {
		g.items = slices.Delete(g.items, 0, len(g.items)-g.size)
	}
	keep := map[string]bool{}
	for _, b := range g.items {
		keep[pictureKey(b)] = true
	}
	for k := range g.pngs {
		if !keep[k] {
			delete(g.pngs, k)
		}
	}
	for k := range g.texts {
		if !keep[k] {
			delete(g.texts, k)
		}
	}
}

func pictureKey(a *wire.AnnotationMessage) string {
	return a.BagID + "\x00" + a.ModelVersion + "\x00" + a.Media.SHA256
}

func isPhoto(a *wire.AnnotationMessage) bool { return a.Regions[0].Mask != nil }

// snapshot describes the kept annotations, newest first.
func (g *gallery) snapshot() []GalleryItem {
	g.mu.Lock()
	items := slices.Clone(g.items)
	g.mu.Unlock()
	out := make([]GalleryItem, 0, len(items))
	for i := len(items) - 1; i >= 0; i-- {
		out = append(out, g.describe(items[i]))
	}
	return out
}

func (g *gallery) describe(a *wire.AnnotationMessage) GalleryItem {
	it := GalleryItem{BagID: a.BagID, Kind: "text", Model: a.Model, ModelVersion: a.ModelVersion, Mode: a.Mode,
		AnnotatedAt: a.AnnotatedAt, URI: a.Media.URI, SHA256: a.Media.SHA256, BagLabels: []string{}}
	for _, c := range a.BagLabels {
		it.BagLabels = append(it.BagLabels, className(a.Classes, c))
	}
	for k, r := range a.Regions {
		gr := GalleryRegion{BBox: r.BBox, Span: r.Span, Colour: "#808080"}
		if k < len(a.InstanceLabels) && a.InstanceLabels[k] >= 0 {
			gr.Label = className(a.Classes, a.InstanceLabels[k])
			c := picture.Colour(a.InstanceLabels[k])
			gr.Colour = fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
		}
		if k < len(a.InstanceScores) {
			gr.Scores = best(a.Classes, a.InstanceScores[k])
		}
		it.Regions = append(it.Regions, gr)
	}
	if g.root == nil {
		it.Error = "no media root: start mimlctl status with --media-root to see the media"
		if isPhoto(a) {
			it.Kind = "photo"
		}
		return it
	}
	if isPhoto(a) {
		it.Kind = "photo"
		if _, err := g.picture(a.BagID); err != nil {
			it.Error = err.Error()
		} else {
			it.Image = "/gallery/" + hex.EncodeToString([]byte(a.BagID)) + ".png?v=" + a.ModelVersion + "&h=" + a.Media.SHA256[:12]
		}
		return it
	}
	doc, err := g.text(a)
	if err != nil {
		it.Error = err.Error()
		return it
	}
	it.Pieces, err = pieces(doc, a.Regions)
	if err != nil {
		it.Error = err.Error()
	}
	return it
}

func className(classes []string, c int) string {
	if c < 0 || c >= len(classes) {
		return fmt.Sprintf("class %d", c)
	}
	return classes[c]
}

// best returns the topScores highest class scores, highest first.
func best(classes []string, scores []float64) []LabelScore {
	out := make([]LabelScore, len(scores))
	for c, s := range scores {
		out[c] = LabelScore{Label: className(classes, c), Score: s}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out[:min(len(out), topScores)]
}

// errNotKept is the answer for a picture of a bag the gallery no longer
// holds.
var errNotKept = errors.New("not in the gallery")

// picture returns the PNG of the kept photo annotation of bag id, drawn
// once per bag and model version.
func (g *gallery) picture(id string) ([]byte, error) {
	g.mu.Lock()
	var a *wire.AnnotationMessage
	for _, b := range g.items {
		if b.BagID == id {
			a = b
		}
	}
	if a == nil || !isPhoto(a) {
		g.mu.Unlock()
		return nil, errNotKept
	}
	key := pictureKey(a)
	if b, ok := g.pngs[key]; ok {
		g.mu.Unlock()
		return b, nil
	}
	g.mu.Unlock()
	raw, err := g.root.Read(a.Media, photo.DefaultMaxBytes)
	if err != nil {
		return nil, err
	}
	img, err := picture.FromAnnotation(a, raw)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.pngs[key] = buf.Bytes()
	g.mu.Unlock()
	return buf.Bytes(), nil
}

// text returns the document annotation a was made from: the file its
// media names under the root, or, for a document sent inline, the one of
// a manifest under the root whose text has the media's SHA-256.
func (g *gallery) text(a *wire.AnnotationMessage) (string, error) {
	key := pictureKey(a)
	g.mu.Lock()
	if s, ok := g.texts[key]; ok {
		g.mu.Unlock()
		return s, nil
	}
	g.mu.Unlock()
	doc, err := g.root.Document(a.Media)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	g.texts[key] = doc
	g.mu.Unlock()
	return doc, nil
}

// pieces cuts doc at every passage boundary (spans in code points) and
// says which passages cover each piece.
func pieces(doc string, regions []media.Region) ([]TextPiece, error) {
	n := utf8.RuneCountInString(doc)
	cuts := []int{0, n}
	for k, r := range regions {
		if r.Span == nil || r.Span.Start < 0 || r.Span.End > n || r.Span.Start > r.Span.End {
			return nil, fmt.Errorf("passage %d: span %v outside the document's %d code points", k, r.Span, n)
		}
		cuts = append(cuts, r.Span.Start, r.Span.End)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	runes := []rune(doc)
	out := make([]TextPiece, 0, len(cuts)-1)
	for i := 0; i+1 < len(cuts); i++ {
		a, b := cuts[i], cuts[i+1]
		p := TextPiece{Text: string(runes[a:b]), Passages: []int{}}
		for k, r := range regions {
			if r.Span.Start <= a && b <= r.Span.End {
				p.Passages = append(p.Passages, k)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// bagOfPath decodes the bag id of a picture's path (/gallery/HEX.png).
func bagOfPath(file string) (string, bool) {
	h, ok := strings.CutSuffix(file, ".png")
	if !ok {
		return "", false
	}
	b, err := hex.DecodeString(h)
	return string(b), err == nil
}
