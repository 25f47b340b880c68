package media

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Media identifies the bytes a bag was made from. The bytes themselves never
// travel with the bag (a photo does not go on Kafka): the hash names them,
// the URI says where the sender had them.
type Media struct {
	// SHA256 is the lower-case hex SHA-256 of the bytes as received.
	SHA256 string `json:"sha256"`
	// Size is their length in bytes.
	Size int64 `json:"size"`
	// URI is where they came from: a file name relative to a manifest, a
	// URL, or the name given to POST /media; "" when none was given.
	URI string `json:"uri,omitempty"`
	// ContentType is the media type the bytes were decoded as
	// ("image/jpeg", "text/plain; charset=utf-8").
	ContentType string `json:"content_type,omitempty"`
}

// Identify returns the identity of data.
func Identify(data []byte, uri, contentType string) Media {
	sum := sha256.Sum256(data)
	return Media{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), URI: uri, ContentType: contentType}
}

// ErrMedia marks a malformed media identity.
var ErrMedia = errors.New("invalid media identity")

// Validate checks the hash's form and the size's sign.
func (m Media) Validate() error {
	if len(m.SHA256) != 64 {
		return fmt.Errorf("%w: sha256 %q is not 64 hex digits", ErrMedia, m.SHA256)
	}
	for _, c := range m.SHA256 {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: sha256 %q is not lower-case hex", ErrMedia, m.SHA256)
		}
	}
	if m.Size < 0 {
		return fmt.Errorf("%w: size %d", ErrMedia, m.Size)
	}
	return nil
}

// Featurizer names the code that turned media into instances: a model fitted
// on one featurizer's instances is meaningless on another's, even when the
// dimensions agree, so bags and models both carry it and the annotator and
// the promotion compare them.
type Featurizer struct {
	// Name is the featurizer's family ("photo-regions", "photo-sbn",
	// "text-hash").
	Name string `json:"name"`
	// Version changes whenever the same bytes and parameters would give
	// other features.
	Version string `json:"version"`
	// Params are the settings that change the features, as strings.
	Params map[string]string `json:"params,omitempty"`
}

// IsZero reports whether f names no featurizer: the bag's instances were
// computed by the sender.
func (f Featurizer) IsZero() bool { return f.Name == "" && f.Version == "" && len(f.Params) == 0 }

// String returns the canonical form name@version?k=v&k=v (keys sorted,
// values query-escaped): equal featurizers, and only they, have equal
// strings, so it keys the feature cache.
func (f Featurizer) String() string {
	var b strings.Builder
	b.WriteString(f.Name)
	b.WriteByte('@')
	b.WriteString(f.Version)
	for i, k := range slices.Sorted(maps.Keys(f.Params)) {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(k))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(f.Params[k]))
	}
	return b.String()
}

// Equal reports whether f and g compute the same features.
func (f Featurizer) Equal(g Featurizer) bool {
	return f.Name == g.Name && f.Version == g.Version && maps.Equal(f.Params, g.Params)
}

// ErrFeaturizer is wrapped by Check when a bag's featurizer is not the
// model's: the dead-letter reason "featurizer".
var ErrFeaturizer = errors.New("featurizer mismatch")

// Check returns nil when a bag made by got may be annotated (or trained on)
// by a model that wants want, and an error wrapping ErrFeaturizer naming
// both otherwise. A model with no featurizer (fitted on vectors computed
// by the sender) takes bags with none, and refuses featurized ones, and the
// reverse: the two kinds of instance are never mixed.
func Check(want, got Featurizer) error {
	if want.Equal(got) {
		return nil
	}
	name := func(f Featurizer) string {
		if f.IsZero() {
			return "none (vectors from the sender)"
		}
		return f.String()
	}
	return fmt.Errorf("%w: the model's is %s, the bag's is %s", ErrFeaturizer, name(want), name(got))
}

// Span is a half-open interval [Start, End) of a text.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Region says where one instance lies in its media: a photo region has BBox
// and Mask, a text passage Span (in Unicode code points) and ByteSpan (in
// UTF-8 bytes).
type Region struct {
	// BBox is [x0, y0, x1, y1] in pixels, x the column, origin top-left,
	// ends exclusive.
	BBox *[4]int `json:"bbox,omitempty"`
	// Mask is the region's pixels as COCO run-length counts.
	Mask     *RLE  `json:"mask,omitempty"`
	Span     *Span `json:"span,omitempty"`
	ByteSpan *Span `json:"byte_span,omitempty"`
}

// ErrRegion marks an inconsistent region.
var ErrRegion = errors.New("invalid region")

// Validate checks a region's internal consistency: a box inside the mask's
// frame and holding every mask pixel, ordered spans.
func (r Region) Validate() error {
	if r.Mask != nil {
		if err := r.Mask.Validate(); err != nil {
			return err
		}
	}
	if b := r.BBox; b != nil {
		if b[0] < 0 || b[1] < 0 || b[0] > b[2] || b[1] > b[3] {
			return fmt.Errorf("%w: bbox %v is not [x0, y0, x1, y1] with x0 <= x1, y0 <= y1", ErrRegion, *b)
		}
		if m := r.Mask; m != nil {
			if b[2] > m.Size[1] || b[3] > m.Size[0] {
				return fmt.Errorf("%w: bbox %v outside the mask's %dx%d frame", ErrRegion, *b, m.Size[1], m.Size[0])
			}
			if mb := m.BBox(); m.Area() > 0 && (mb[0] < b[0] || mb[1] < b[1] || mb[2] > b[2] || mb[3] > b[3]) {
				return fmt.Errorf("%w: mask pixels outside bbox %v", ErrRegion, *b)
			}
		}
	}
	for _, s := range []*Span{r.Span, r.ByteSpan} {
		if s != nil && (s.Start < 0 || s.End < s.Start) {
			return fmt.Errorf("%w: span [%d, %d)", ErrRegion, s.Start, s.End)
		}
	}
	return nil
}
