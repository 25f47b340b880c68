package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/textbag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// MediaResult is the answer to POST /media.
type MediaResult struct {
	ID        string `json:"id"`
	SHA256    string `json:"sha256,omitempty"`
	Published bool   `json:"published"`
	// Reason and Error say why a photo was refused (and dead-lettered).
	Reason wire.Reason `json:"reason,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// mediaTypes are the content types POST /media reads.
var mediaTypes = []string{"image/png", "image/jpeg", "image/bmp", "image/webp", "text/plain"}

// mediaHandler serves POST /media: one photo a request, its bytes the body
// and its content type one of mediaTypes; the query names it (id, default
// its SHA-256), labels it (labels=a,b, over classes=a,b,c, the vocabulary
// the labels index) and says where it came from (uri).
type mediaHandler struct {
	pub *Publisher
	cfg HTTPConfig
	log *slog.Logger
	f   *imagefeat.Featurizer
	tf  text.Featurizer // documents (text/plain), with a term cache shared by requests
}

// ServeHTTP answers:
//
//	200  the photo published (a bag of its regions, with its provenance),
//	     or the document (text/plain, UTF-8: a bag of its passages)
//	422  the photo refused, with the reason (corrupt, unsupported, a bomb:
//	     media; beyond the byte bound: oversize; a label outside classes:
//	     vocabulary; a document that is not UTF-8: media) and dead-lettered
//	400  labels without classes
//	413  a body beyond the photo byte bound (nothing published)
//	415  a content type other than an image's
//	503  publishing failed (Kafka unavailable): send it again
func (h *mediaHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res := MediaResult{ID: q.Get("id")}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	supported := false
	for _, t := range mediaTypes {
		supported = supported || ct == t
	}
	if !supported {
		res.Error = fmt.Sprintf("content type %q: POST /media reads %s", ct, strings.Join(mediaTypes, ", "))
		h.write(w, http.StatusUnsupportedMediaType, res)
		return
	}
	limit := int64(photo.DefaultMaxBytes)
	if ct == "text/plain" {
		limit = text.MaxDocumentBytes
	}
	if h.cfg.MaxBodyBytes > 0 {
		limit = min(limit, h.cfg.MaxBodyBytes)
	}
	if r.ContentLength > limit {
		res.Error = fmt.Sprintf("body of %d bytes exceeds the %d-byte limit", r.ContentLength, limit)
		w.Header().Set("Connection", "close")
		h.write(w, http.StatusRequestEntityTooLarge, res)
		return
	}
	body := httpguard.MinRate(w, r.Body, h.cfg.MinBodyRate, h.cfg.MinBodyRateGrace)
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		res.Error = "read body: " + err.Error()
		h.write(w, http.StatusBadRequest, res)
		return
	}
	if int64(len(data)) > limit {
		res.Error = fmt.Sprintf("body exceeds the %d-byte limit", limit)
		w.Header().Set("Connection", "close")
		h.write(w, http.StatusRequestEntityTooLarge, res)
		return
	}
	md := media.Identify(data, q.Get("uri"), ct)
	res.SHA256 = md.SHA256
	if res.ID == "" {
		res.ID = md.SHA256
	}
	ph := photobag.Photo{ID: res.ID, URI: q.Get("uri"), Data: data}
	var classes []string
	if l := q.Get("labels"); l != "" {
		ph.Labels = strings.Split(l, ",")
		if q.Get("classes") == "" {
			res.Error = "labels need classes=..., the vocabulary they index"
			h.write(w, http.StatusBadRequest, res)
			return
		}
		classes = strings.Split(q.Get("classes"), ",")
	}
	orig, _ := json.Marshal(map[string]any{"id": res.ID, "uri": ph.URI, "content_type": ct, "sha256": md.SHA256, "size": md.Size})
	var rej []Rejection
	if ct == "text/plain" {
		// A document: cut into passages and featurized as ingest --data
		// does; not UTF-8 is reason media with the bad byte's offset.
		d := textbag.Doc{ID: ph.ID, URI: ph.URI, Data: data, Labels: ph.Labels}
		rej, err = h.pub.PublishDocuments(r.Context(), h.tf, classes, []textbag.Doc{d}, [][]byte{orig})
	} else {
		rej, err = h.pub.PublishPhotos(r.Context(), h.f, classes, photo.Limits{MaxBytes: int(limit)}, []photobag.Photo{ph}, [][]byte{orig})
	}
	switch {
	case err != nil:
		h.log.Warn("POST /media: publish failed", "id", res.ID, "err", err)
		res.Error = "publish: " + err.Error()
		w.Header().Set("Retry-After", "1")
		h.write(w, http.StatusServiceUnavailable, res)
	case len(rej) > 0:
		res.Reason, res.Error = rej[0].Reason, rej[0].Error
		h.write(w, http.StatusUnprocessableEntity, res)
	default:
		res.Published = true
		h.write(w, http.StatusOK, res)
	}
}

func (h *mediaHandler) write(w http.ResponseWriter, status int, res MediaResult) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(res); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		h.log.Debug("POST /media: write answer", "err", err)
	}
}
