package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// TestPostMedia: POST /media takes a photo behind the bearer token and
// publishes its bag with its provenance; a corrupt photo is answered 422
// with reason media (and dead-lettered), a label without classes 400,
// another content type 415, no token 401.
func TestPostMedia(t *testing.T) {
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 1, topics.All()...)
	p, err := NewPublisher(PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tokPath := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokPath, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := httpguard.LoadTokens(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(p, HTTPConfig{Tokens: tokens, MaxLineBytes: 1 << 20, MaxConcurrent: 2}, nil))
	defer srv.Close()
	good, err := os.ReadFile("../../../testdata/msrc_v2_sample/images/12_29_s.jpg")
	if err != nil {
		t.Fatal(err)
	}
	post := func(query, ctype, token string, body []byte) (int, MediaResult) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/media?"+query, bytes.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res MediaResult
		_ = json.NewDecoder(resp.Body).Decode(&res)
		return resp.StatusCode, res
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
	v, _ := wire.NewValidator(0)
	raws := readTopic(t, brokers, topics.Train, 1)
	m, err := v.DecodeBag(raws[0])
	if err != nil || m.ID != "ducks" || m.Media == nil || m.Media.URI != "ducks.jpg" || len(m.Regions) != len(m.Instances) || len(m.Labels) != 2 {
		t.Fatalf("published bag %+v: %v", m, err)
	}
}
