package ingest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TestPostMedia: POST /media takes a photo behind the bearer token and
// publishes its bag with its provenance; a corrupt photo is answered 422
// with reason media (and dead-lettered), a label without classes 400,
// another content type 415, no token 401.
func TestPostMedia(t *testing.T) {
	p, brokers, topics := startPublisher(t, PublisherConfig{LabelFraction: 1})
	srv := httptest.NewServer(Handler(p, HTTPConfig{Tokens: loadTokens(t, "s3cret\n"), MaxLineBytes: 1 << 20, MaxConcurrent: 2}, nil))
	defer srv.Close()
	good, err := os.ReadFile("../../../testdata/msrc_v2_sample/images/12_29_s.jpg")
	if err != nil {
		t.Fatal(err)
	}
	post := func(query, ctype, token string, body []byte) (int, MediaResult) {
		return postMedia(t, srv.URL, query, ctype, token, body)
	}
	if code, res := post("id=ducks&uri=ducks.jpg&labels=bird,grass&classes=bird,grass,sky", "image/jpeg", "s3cret", good); code != http.StatusOK || !res.Published || res.SHA256 == "" {
		t.Fatalf("photo: %d %+v", code, res)
	}
	if code, res := post("id=broken", "image/jpeg", "s3cret", good[:len(good)/4]); code != http.StatusUnprocessableEntity || res.Reason != wire.ReasonMedia {
		t.Errorf("corrupt photo: %d %+v", code, res)
	}
	if code, _ := post("labels=bird", "image/jpeg", "s3cret", good); code != http.StatusBadRequest {
		t.Errorf("labels without classes: %d", code)
	}
	if code, _ := post("", "text/html", "s3cret", []byte("<p>")); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/html: %d", code)
	}
	if code, _ := post("", "image/jpeg", "", good); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if m := readBags(t, brokers, topics.Train, 1)[0]; m.ID != "ducks" || m.Media == nil || m.Media.URI != "ducks.jpg" || len(m.Regions) != len(m.Instances) || len(m.Labels) != 2 {
		t.Fatalf("published bag %+v", m)
	}
}
