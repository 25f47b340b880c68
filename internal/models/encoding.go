package models

import (
	"encoding/json"
	"fmt"
)

// FormatVersion is the version of the serialized envelope. Decoders refuse
// versions they do not know rather than guess.
const FormatVersion = 1

// envelope is the self-describing serialized form of a model: what the model
// registry stores as an immutable blob.
type envelope struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Meta    Meta            `json:"meta"`
	State   json.RawMessage `json:"state"`
}

const formatName = "mimlstream.model"

// Encode serializes a model with its metadata.
func Encode(m Model) ([]byte, error) {
	state, err := m.MarshalState()
	if err != nil {
		return nil, fmt.Errorf("encode %s state: %w", m.Meta().Kind, err)
	}
	return json.Marshal(envelope{Format: formatName, Version: FormatVersion, Meta: m.Meta(), State: state})
}

// PeekMeta reads the metadata of a serialized model without decoding its state.
func PeekMeta(blob []byte) (Meta, error) {
	var e envelope
	if err := json.Unmarshal(blob, &e); err != nil {
		return Meta{}, fmt.Errorf("decode model envelope: %w", err)
	}
	if e.Format != formatName {
		return Meta{}, fmt.Errorf("decode model: format %q is not %q", e.Format, formatName)
	}
	if e.Version != FormatVersion {
		return Meta{}, fmt.Errorf("decode model: envelope version %d not supported (want %d)", e.Version, FormatVersion)
	}
	return e.Meta, nil
}

// Decode deserializes a model produced by Encode.
func (r *Registry) Decode(blob []byte) (Model, error) {
	var e envelope
	if err := json.Unmarshal(blob, &e); err != nil {
		return nil, fmt.Errorf("decode model envelope: %w", err)
	}
	if e.Format != formatName {
		return nil, fmt.Errorf("decode model: format %q is not %q", e.Format, formatName)
	}
	if e.Version != FormatVersion {
		return nil, fmt.Errorf("decode model: envelope version %d not supported (want %d)", e.Version, FormatVersion)
	}
	k, err := r.Lookup(e.Meta.Kind)
	if err != nil {
		return nil, err
	}
	m, err := k.Decode(e.Meta, e.State)
	if err != nil {
		return nil, fmt.Errorf("decode %s model: %w", e.Meta.Kind, err)
	}
	return m, nil
}
