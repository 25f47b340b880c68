package picture

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"

	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// FromAnnotation draws annotation a on the photo whose bytes are raw: its
// regions (their RLE masks, as the bag carried them) tinted by the labels
// it gives them. The photo must be the one the annotation names: its
// SHA-256 is checked against the annotation's media. mimlctl picture, the
// status page's gallery and the media demo all draw through it.
func FromAnnotation(a *wire.AnnotationMessage, raw []byte) (*image.RGBA, error) {
	if len(a.Regions) == 0 {
		return nil, fmt.Errorf("bag %s: the annotation carries no regions (not a photo bag)", a.BagID)
	}
	if len(a.InstanceLabels) != len(a.Regions) {
		return nil, fmt.Errorf("bag %s: %d instance labels for %d regions", a.BagID, len(a.InstanceLabels), len(a.Regions))
	}
	if a.Media != nil {
		sum := sha256.Sum256(raw)
		if got := hex.EncodeToString(sum[:]); got != a.Media.SHA256 {
			return nil, fmt.Errorf("bag %s: the photo's SHA-256 is %s, the annotation's media %s (%s)", a.BagID, got, a.Media.SHA256, a.Media.URI)
		}
	}
	img, err := photo.Decode(raw, photo.Limits{})
	if err != nil {
		return nil, err
	}
	regions := make([]int32, img.W*img.H)
	for i := range regions {
		regions[i] = -1
	}
	for k, r := range a.Regions {
		if r.Mask == nil {
			return nil, fmt.Errorf("bag %s region %d has no mask", a.BagID, k)
		}
		if r.Mask.Size != [2]int{img.H, img.W} {
			return nil, fmt.Errorf("bag %s region %d: a %dx%d mask on a %dx%d photo", a.BagID, k, r.Mask.Size[1], r.Mask.Size[0], img.W, img.H)
		}
		m, err := r.Mask.Decode()
		if err != nil {
			return nil, fmt.Errorf("bag %s region %d: %w", a.BagID, k, err)
		}
		for p, v := range m {
			if v {
				regions[p] = int32(k)
			}
		}
	}
	title := a.BagID
	if a.Model != "" {
		title = fmt.Sprintf("%s, %s %s", a.BagID, a.Model, a.ModelVersion)
	}
	return Render(Input{Photo: img, Regions: regions, Labels: a.InstanceLabels, Classes: a.Classes, BagLabels: a.BagLabels, Title: title})
}
