package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mimlstream/mimlstream/internal/media"
)

// A media bag (a photo cut into regions, a document into passages) carries
// its provenance beside its instances, in three optional properties of the
// bag and annotation schemas: media (the bytes' SHA-256, size and URI;
// the bytes themselves never go on a topic), featurizer (the name, version
// and parameters of the code that made the instances) and regions (per
// instance, its box and COCO RLE mask in the photo, or its span of the
// text). Decoders check them strictly: CheckProvenanceJSON mirrors the
// schema, CheckProvenance what the schema says in words only.

// errProvenance prefixes a provenance fault.
var errProvenance = errors.New("provenance")

// decodeProvenance checks one provenance property's raw JSON value as the
// schema does and decodes it into m; the error is a schema fault.
func decodeProvenance(key, raw string, m *BagMessage) error {
	doc, err := genericJSON(raw)
	if err != nil {
		return err
	}
	switch key {
	case "media":
		if err := checkMedia(doc); err != nil {
			return fmt.Errorf("media: %w", err)
		}
		m.Media = new(media.Media)
		return strictUnmarshal(raw, m.Media)
	case "featurizer":
		if err := checkFeaturizer(doc); err != nil {
			return fmt.Errorf("featurizer: %w", err)
		}
		m.Featurizer = new(media.Featurizer)
		return strictUnmarshal(raw, m.Featurizer)
	case "regions":
		if err := checkRegions(doc); err != nil {
			return fmt.Errorf("regions: %w", err)
		}
		return strictUnmarshal(raw, &m.Regions)
	}
	return fmt.Errorf("%w: no property %q", errProvenance, key)
}

func genericJSON(raw string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func strictUnmarshal(raw string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// object checks that v is an object with the required keys and no key
// outside allowed, and returns it.
func object(v any, required []string, allowed ...string) (map[string]any, error) {
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: not an object", errProvenance)
	}
	for _, k := range required {
		if _, ok := o[k]; !ok {
			return nil, fmt.Errorf("%w: missing %q", errProvenance, k)
		}
	}
	for k := range o {
		known := false
		for _, a := range append(required, allowed...) {
			known = known || k == a
		}
		if !known {
			return nil, fmt.Errorf("%w: unknown property %q", errProvenance, k)
		}
	}
	return o, nil
}

// nonNegative checks a JSON integer >= 0 that an int holds.
func nonNegative(v any, what string) error {
	n, ok := v.(json.Number)
	if !ok {
		return fmt.Errorf("%w: %s is not a number", errProvenance, what)
	}
	i, err := strconv.ParseInt(n.String(), 10, 0)
	if err != nil || i < 0 {
		return fmt.Errorf("%w: %s %s is not an integer >= 0", errProvenance, what, n)
	}
	return nil
}

func isString(v any, what string) error {
	if _, ok := v.(string); !ok {
		return fmt.Errorf("%w: %s is not a string", errProvenance, what)
	}
	return nil
}

func checkMedia(v any) error {
	o, err := object(v, []string{"sha256", "size"}, "uri", "content_type")
	if err != nil {
		return err
	}
	h, ok := o["sha256"].(string)
	if !ok || len(h) != 64 {
		return fmt.Errorf("%w: sha256 is not 64 lower-case hex digits", errProvenance)
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: sha256 is not 64 lower-case hex digits", errProvenance)
		}
	}
	if err := nonNegative(o["size"], "size"); err != nil {
		return err
	}
	for _, k := range []string{"uri", "content_type"} {
		if x, ok := o[k]; ok {
			if err := isString(x, k); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkFeaturizer(v any) error {
	o, err := object(v, []string{"name", "version"}, "params")
	if err != nil {
		return err
	}
	if s, ok := o["name"].(string); !ok || s == "" {
		return fmt.Errorf("%w: name is not a non-empty string", errProvenance)
	}
	if err := isString(o["version"], "version"); err != nil {
		return err
	}
	if p, ok := o["params"]; ok {
		ps, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: params is not an object", errProvenance)
		}
		for k, x := range ps {
			if err := isString(x, "params."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkInts(v any, n int, what string) error {
	a, ok := v.([]any)
	if !ok || (n >= 0 && len(a) != n) {
		return fmt.Errorf("%w: %s is not an array of %d integers", errProvenance, what, n)
	}
	for _, x := range a {
		if err := nonNegative(x, what); err != nil {
			return err
		}
	}
	return nil
}

func checkSpan(v any, what string) error {
	o, err := object(v, []string{"start", "end"})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := nonNegative(o["start"], what+".start"); err != nil {
		return err
	}
	return nonNegative(o["end"], what+".end")
}

func checkRegions(v any) error {
	a, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%w: not an array", errProvenance)
	}
	for k, r := range a {
		o, err := object(r, nil, "bbox", "mask", "span", "byte_span")
		if err != nil {
			return fmt.Errorf("region %d: %w", k, err)
		}
		if b, ok := o["bbox"]; ok {
			if err := checkInts(b, 4, "bbox"); err != nil {
				return fmt.Errorf("region %d: %w", k, err)
			}
		}
		if m, ok := o["mask"]; ok {
			mo, err := object(m, []string{"size", "counts"})
			if err != nil {
				return fmt.Errorf("region %d mask: %w", k, err)
			}
			if err := checkInts(mo["size"], 2, "mask.size"); err != nil {
				return fmt.Errorf("region %d: %w", k, err)
			}
			if err := checkInts(mo["counts"], -1, "mask.counts"); err != nil {
				return fmt.Errorf("region %d: %w", k, err)
			}
		}
		for _, s := range []string{"span", "byte_span"} {
			if x, ok := o[s]; ok {
				if err := checkSpan(x, s); err != nil {
					return fmt.Errorf("region %d: %w", k, err)
				}
			}
		}
	}
	return nil
}

// CheckProvenance checks what the schema says of provenance in words only:
// one region per instance, each consistent (a mask's counts covering its
// frame, a box holding its mask's pixels, ordered spans), and every mask
// of the same frame. Faults are schema faults.
func CheckProvenance(m *BagMessage) error {
	if m.Regions == nil {
		return nil
	}
	instances := len(m.Instances) + len(m.SparseInstances)
	if len(m.Regions) != instances {
		return Reject(ReasonSchema, fmt.Errorf("bag %q: %d regions for %d instances (one per instance)", m.ID, len(m.Regions), instances))
	}
	var frame *[2]int
	for k, r := range m.Regions {
		if err := r.Validate(); err != nil {
			return Reject(ReasonSchema, fmt.Errorf("bag %q region %d: %w", m.ID, k, err))
		}
		if r.Mask != nil {
			if frame != nil && *frame != r.Mask.Size {
				return Reject(ReasonSchema, fmt.Errorf("bag %q region %d: mask of size %v, region 0's is %v", m.ID, k, r.Mask.Size, *frame))
			}
			frame = &r.Mask.Size
		}
	}
	return nil
}

// appendProvenance appends the provenance properties of a bag or an
// annotation as encoding/json writes them (the reflective encoder: they
// are rare and small).
func appendProvenance(b []byte, md *media.Media, f *media.Featurizer, regions []media.Region) ([]byte, error) {
	for _, p := range []struct {
		key string
		v   any
		set bool
	}{{"media", md, md != nil}, {"featurizer", f, f != nil}, {"regions", regions, len(regions) > 0}} {
		if !p.set {
			continue
		}
		raw, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"`...)
		b = append(b, p.key...)
		b = append(b, `":`...)
		b = append(b, raw...)
	}
	return b, nil
}
