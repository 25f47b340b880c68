package wire

import (
	"strconv"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// MarshalJSON writes the bag exactly as encoding/json's reflection would
// (same fields, order, omissions, escaping and number formatting: the
// differential test holds it to that), without reflection: ingest encodes
// every bag it publishes from a dataset, and the reflective encoder was the
// largest single cost of the publisher. Like encoding/json, it fails on a
// NaN or infinite feature.
func (m BagMessage) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(nil)
}

// AppendJSON appends the JSON encoding of m (MarshalJSON's bytes) to b.
func (m *BagMessage) AppendJSON(b []byte) ([]byte, error) {
	n := 128 + len(m.ID) + len(m.Source) + 12*len(m.Classes) + 4*(len(m.Labels)+len(m.InstanceLabels))
	for _, x := range m.Instances {
		// A short decimal feature (the common case: MSCV2's have six
		// places) takes about 8 bytes with its comma; a longer one makes
		// the buffer grow once.
		n += 8*len(x) + 2
	}
	for _, v := range m.SparseInstances {
		n += 16*len(v.Val) + 20
	}
	b = growBytes(b, n)
	b = append(b, `{"schema_version":`...)
	b = strconv.AppendInt(b, int64(m.SchemaVersion), 10)
	b = appendKeyString(b, "id", m.ID)
	if m.Source != "" {
		b = appendKeyString(b, "source", m.Source)
	}
	b = append(b, `,"dim":`...)
	b = strconv.AppendInt(b, int64(m.Dim), 10)
	var err error
	if m.Instances != nil {
		b = append(b, `,"instances":`...)
		if b, err = appendFloatRows(b, m.Instances); err != nil {
			return nil, err
		}
	}
	if m.SparseInstances != nil {
		b = append(b, `,"sparse_instances":[`...)
		for i, v := range m.SparseInstances {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendSparse(b, v); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(m.Classes) > 0 {
		b = append(b, `,"classes":`...)
		b = appendStrings(b, m.Classes)
	}
	if m.Labels != nil {
		b = append(b, `,"labels":`...)
		b = appendInts(b, m.Labels)
	}
	if len(m.InstanceLabels) > 0 {
		b = append(b, `,"instance_labels":`...)
		b = appendInts(b, m.InstanceLabels)
	}
	if b, err = appendProvenance(b, m.Media, m.Featurizer, m.Regions); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendSparse appends one sparse instance as encoding/json writes a
// mil.SparseVec: {"idx":[...],"val":[...]}, nil slices null.
func appendSparse(b []byte, v mil.SparseVec) ([]byte, error) {
	b = append(b, `{"idx":`...)
	if v.Idx == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, x := range v.Idx {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(x), 10)
		}
		b = append(b, ']')
	}
	b = append(b, `,"val":`...)
	b, err := appendFloats(b, v.Val)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
