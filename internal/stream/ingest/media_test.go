package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photo"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// bombPNG is a valid 2x2 PNG whose header is rewritten to declare
// 100000 x 100000 pixels (CRC fixed), as a decompression bomb's is.
func bombPNG(t *testing.T) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b[16:], 100000)
	binary.BigEndian.PutUint32(b[20:], 100000)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

// TestPublishPhotos: a photo becomes a bag of its regions with its
// provenance on both topics (labeled); a corrupt, a bomb, an unsupported
// and an oversize photo, and one labeled outside the vocabulary, are
// dead-lettered with their reasons, their manifest lines as originals,
// and the good photo still goes out.
func TestPublishPhotos(t *testing.T) {
	p, brokers, topics := startPublisher(t, PublisherConfig{LabelFraction: 1, Format: wire.FormatProtobuf})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good, err := os.ReadFile("../../../testdata/msrc_v2_sample/images/12_29_s.jpg")
	if err != nil {
		t.Fatal(err)
	}
	photos := []photobag.Photo{
		{ID: "ducks", URI: "images/12_29_s.jpg", Data: good, Labels: []string{"grass", "bird"}},
		{ID: "corrupt", URI: "c.jpg", Data: good[:len(good)/3], Labels: []string{"bird"}},
		{ID: "bomb", URI: "b.png", Data: bombPNG(t)},
		{ID: "text", URI: "t.txt", Data: []byte("not an image")},
		{ID: "huge", URI: "h.jpg", Data: append(bytes.Repeat([]byte{0}, 1<<20), good...)},
		{ID: "stranger", URI: "images/12_29_s.jpg", Data: good, Labels: []string{"dragon"}},
	}
	orig := make([][]byte, len(photos))
	for i, p := range photos {
		orig[i] = []byte(`{"id":"` + p.ID + `","image":"` + p.URI + `"}`)
	}
	f, _ := imagefeat.New(imagefeat.DefaultParams())
	classes := []string{"bird", "grass"}
	rej, err := p.PublishPhotos(ctx, f, classes, photo.Limits{MaxBytes: 1 << 20}, photos, orig)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]wire.Reason{}
	for _, r := range rej {
		got[r.ID] = r.Reason
	}
	want := map[string]wire.Reason{"corrupt": wire.ReasonMedia, "bomb": wire.ReasonMedia, "text": wire.ReasonMedia,
		"huge": wire.ReasonOversize, "stranger": wire.ReasonVocabulary}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rejected %v, want %v", got, want)
	}
	// The bag on the train topic: in the configured format (the binary
	// one, provenance included), one region per instance, the photo's
	// hash and the featurizer's name.
	bag, ct := firstBag(t, brokers, topics.Train)
	if ct != wire.ContentTypeProtobuf {
		t.Errorf("media bag sent as %q, the configured format is protobuf", ct)
	}
	if bag.ID != "ducks" || bag.Media == nil || bag.Media.Size != int64(len(good)) || bag.Featurizer == nil || bag.Featurizer.Name != imagefeat.Name ||
		len(bag.Regions) != len(bag.Instances) || !reflect.DeepEqual(bag.Labels, []int{0, 1}) {
		t.Fatalf("bag %s: media %+v featurizer %+v, %d regions for %d instances, labels %v", bag.ID, bag.Media, bag.Featurizer, len(bag.Regions), len(bag.Instances), bag.Labels)
	}
	wantDeadLetters(t, brokers, topics.DeadLetter, want)
}

// TestIngestPhotoManifestAndFolder: ingest --data with testdata's photo
// manifest publishes its three photos as media bags (the labeled ones to
// the train topic too), and a folder of photos publishes each image file
// of it, unlabeled.
func TestIngestPhotoManifestAndFolder(t *testing.T) {
	brokers, topics := startCluster(t)
	b := strings.Join(brokers, ",")
	if stdout, _ := runCommand(t, "--brokers", b, "--data", "../../../testdata/msrc_v2_sample/bags.jsonl", "--label-fraction", "1", "--progress=false"); !strings.Contains(stdout, "published 3 bags (3 labeled") {
		t.Errorf("summary %q", stdout)
	}
	for _, m := range readBags(t, brokers, topics.Train, 3) {
		if m.Media == nil || len(m.Regions) != len(m.Instances) || len(m.Classes) != 23 {
			t.Fatalf("train bag %v", m)
		}
	}
	if stdout, _ := runCommand(t, "--brokers", b, "--data", "../../../testdata/msrc_v2_sample/images", "--progress=false"); !strings.Contains(stdout, "published 3 bags (0 labeled") {
		t.Errorf("folder summary %q", stdout)
	}
	readTopic(t, brokers, topics.Annotate, 6)
}

// countingCache counts the lookups that hit and the entries written (one
// per photo featurized) of a featurecache.Cache.
type countingCache struct {
	c          *featurecache.Cache
	hits, puts int
}

func (c *countingCache) GetRaw(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := c.c.GetRaw(ctx, key)
	if ok {
		c.hits++
	}
	return v, ok, err
}

func (c *countingCache) PutRaw(ctx context.Context, key string, v []byte) error {
	c.puts++
	return c.c.PutRaw(ctx, key, v)
}

// TestPhotoSentTwiceFeaturizedOnce: through the Redis feature cache, the
// same photo sent twice (under two ids, two names) is featurized once;
// the second bag has the first's instances and regions, and its own id.
func TestPhotoSentTwiceFeaturizedOnce(t *testing.T) {
	rdb, _, prefix := realRedis(t, "media")
	cache := &countingCache{c: featurecache.New(rdb, prefix, time.Hour, 100)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good, err := os.ReadFile("../../../testdata/msrc_v2_sample/images/12_29_s.jpg")
	if err != nil {
		t.Fatal(err)
	}
	p, brokers, topics := startPublisher(t, PublisherConfig{LabelFraction: 1, MediaCache: cache})
	f, _ := imagefeat.New(imagefeat.DefaultParams())
	for _, id := range []string{"first", "again"} {
		ph := photobag.Photo{ID: id, URI: id + ".jpg", Data: good}
		if rej, err := p.PublishPhotos(ctx, f, nil, photo.Limits{}, []photobag.Photo{ph}, [][]byte{[]byte(id)}); err != nil || len(rej) != 0 {
			t.Fatalf("publish %s: %v %v", id, rej, err)
		}
	}
	if cache.puts != 1 || cache.hits != 1 {
		t.Fatalf("featurized %d times, %d cache hits; want 1 and 1", cache.puts, cache.hits)
	}
	bags := map[string]*wire.BagMessage{}
	for _, m := range readBags(t, brokers, topics.Annotate, 2) {
		bags[m.ID] = m
	}
	a, b := bags["first"], bags["again"]
	if a == nil || b == nil || !reflect.DeepEqual(a.Instances, b.Instances) || !reflect.DeepEqual(a.Regions, b.Regions) ||
		a.Media.SHA256 != b.Media.SHA256 || b.Media.URI != "again.jpg" || b.Media.ContentType != "image/jpeg" {
		t.Fatalf("bags %+v / %+v", a, b)
	}
}
