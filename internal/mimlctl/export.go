package mimlctl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
)

// exportFormat names the export file format; import refuses other
// versions of it.
const exportFormat = exportFormatName + "/v1"

// exportFormatName is the export format without its version.
const exportFormatName = "mimlstream.model-export"

// exportFile is an exported model version: the registry's metadata and the
// blob, byte for byte (base64 in JSON), so its checksum can be verified on
// import.
type exportFile struct {
	Format     string                   `json:"format"`
	ExportedAt time.Time                `json:"exported_at"`
	Meta       featurestore.VersionMeta `json:"meta"`
	Blob       []byte                   `json:"blob"`
}

func encodeExport(meta featurestore.VersionMeta, blob []byte, at time.Time) ([]byte, error) {
	b, err := json.MarshalIndent(exportFile{Format: exportFormat, ExportedAt: at.UTC(), Meta: meta, Blob: blob}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode export of %s: %w", meta.Version, err)
	}
	return append(b, '\n'), nil
}

// errImport marks a file that import refuses.
var errImport = errors.New("refused")

// decodeImport reads an export file, or a bare model envelope
// (models.Encode, as `retrainer fit` builds it), and returns the blob and
// the metadata to store. An export's blob must match its checksum, size,
// kind, dimension and classes; every blob must decode with kinds, so that
// what is stored can be served.
func decodeImport(data []byte, kinds *models.Registry) ([]byte, featurestore.VersionMeta, error) {
	var head struct {
		Format *string `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, featurestore.VersionMeta{}, fmt.Errorf("%w: not JSON: %w", errImport, err)
	}
	var (
		blob []byte
		meta featurestore.VersionMeta
	)
	// An export names its format; anything else is taken as a bare model
	// envelope (whose own "format" is the envelope's), which the catalog
	// decodes or refuses below.
	export := head.Format != nil && strings.HasPrefix(*head.Format, exportFormatName+"/")
	if export {
		if *head.Format != exportFormat {
			return nil, meta, fmt.Errorf("%w: format %q, want %q", errImport, *head.Format, exportFormat)
		}
		var f exportFile
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, meta, fmt.Errorf("%w: %w", errImport, err)
		}
		blob, meta = f.Blob, f.Meta
		sum := sha256.Sum256(blob)
		if got := hex.EncodeToString(sum[:]); got != meta.Checksum {
			return nil, meta, fmt.Errorf("%w: %w: blob sha256 %s, the export says %s", errImport, featurestore.ErrCorrupt, got, meta.Checksum)
		}
		if len(blob) != meta.Size {
			return nil, meta, fmt.Errorf("%w: %w: blob has %d bytes, the export says %d", errImport, featurestore.ErrCorrupt, len(blob), meta.Size)
		}
	} else {
		blob = data
	}
	m, err := kinds.Decode(blob)
	if err != nil {
		return nil, meta, fmt.Errorf("%w: the model does not decode: %w", errImport, err)
	}
	mm := m.Meta()
	if export {
		// Put checks the blob's envelope against meta too; checking the
		// decoded model as well catches an envelope that lies about it.
		if meta.Kind != mm.Kind || meta.Dim != mm.Dim || !slices.Equal(meta.Classes, mm.Classes) {
			return nil, meta, fmt.Errorf("%w: %w: metadata says %s dim %d, the model is %s dim %d", errImport, featurestore.ErrCorrupt, meta.Kind, meta.Dim, mm.Kind, mm.Dim)
		}
	}
	meta.Kind, meta.Dim, meta.Classes = mm.Kind, mm.Dim, mm.Classes
	return blob, meta, nil
}
