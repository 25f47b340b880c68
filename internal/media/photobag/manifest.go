package photobag

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Line is one photo of a manifest (JSON lines, as msrc_v2_dev's
// bags.jsonl): the image's path relative to the manifest's folder, its
// weak labels, and optional ground truth that only evaluation reads.
type Line struct {
	ID     string   `json:"id"`
	Image  string   `json:"image"`
	Labels []string `json:"labels,omitempty"`
	// GTMask is an 8-bit greyscale PNG of the photo's size whose pixel
	// value is a region id (0: void); Regions names each id's class.
	GTMask  string     `json:"gt_mask,omitempty"`
	Regions []GTRegion `json:"regions,omitempty"`
}

// GTRegion is one ground-truth region of a photo.
type GTRegion struct {
	ID    int    `json:"id"`
	Label string `json:"label"`
}

// ErrManifest marks a manifest line that cannot be used.
var ErrManifest = errors.New("invalid manifest")

// maxLine bounds a manifest line (a photo's regions and labels, not its
// pixels).
const maxLine = 1 << 20

// ReadManifest reads a manifest. Paths in it are relative to its folder,
// which it returns.
func ReadManifest(path string) ([]Line, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLine)
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, "", fmt.Errorf("%w: %s line %d: %w", ErrManifest, path, n, err)
		}
		if l.Image == "" {
			return nil, "", fmt.Errorf("%w: %s line %d: no image", ErrManifest, path, n)
		}
		if l.ID == "" {
			l.ID = l.Image
		}
		if prev, ok := seen[l.ID]; ok {
			return nil, "", fmt.Errorf("%w: %s line %d: id %q already on line %d", ErrManifest, path, n, l.ID, prev)
		}
		seen[l.ID] = n
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrManifest, path, err)
	}
	return out, filepath.Dir(path), nil
}

// IsPhotoManifest reports whether the first line of the JSON-lines file at
// path names an image (and so is a photo manifest, not a file of bags).
func IsPhotoManifest(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var probe struct {
			Image *string `json:"image"`
		}
		return json.Unmarshal(sc.Bytes(), &probe) == nil && probe.Image != nil
	}
	return false
}

// Classes returns the vocabulary of a manifest's photos: classes.json
// ({"classes": [...]}) in its folder when there is one, else the sorted
// union of the labels and region labels of its lines.
func Classes(dir string, lines []Line) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "classes.json"))
	if err == nil {
		var c struct {
			Classes []string `json:"classes"`
		}
		if err := json.Unmarshal(b, &c); err != nil || len(c.Classes) == 0 {
			return nil, fmt.Errorf("%s: want {\"classes\": [...]}: %v", filepath.Join(dir, "classes.json"), err)
		}
		return c.Classes, nil
	}
	if !os.IsNotExist(err) {
		return nil, err
	}
	set := map[string]bool{}
	for _, l := range lines {
		for _, c := range l.Labels {
			set[c] = true
		}
		for _, r := range l.Regions {
			set[r.Label] = true
		}
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}
