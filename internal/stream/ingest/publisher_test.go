package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

func TestKeepLabelsIsStableAndProportional(t *testing.T) {
	n := 20000
	p := &Publisher{cfg: PublisherConfig{LabelFraction: 0.3, Seed: 7}}
	kept := 0
	for i := range n {
		if p.KeepLabels(fmt.Sprintf("bag-%d", i)) {
			kept++
		}
	}
	if d := kept - 3*n/10; d < -324 || d > 324 { // sd 64.8
		t.Errorf("label fraction 0.3 kept %d of %d", kept, n)
	}
}

// bigBag returns a valid labeled bag message of about size bytes (many
// instances of dimension 4).
func bigBag(id string, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"schema_version":1,"id":%q,"dim":4,"classes":["a","b"],"labels":[1],"instances":[`, id)
	for i := 0; b.Len() < size-40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[0.%06d,0.25,0.5,0.75]", i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// TestPublishSizeDiscipline: 40 valid bags of 226 KB are published (each
// fits the broker's 1 MiB; the requests stay within it); a bag whose
// message exceeds the limit the broker reports is rejected as oversize
// with ErrTooLarge before anything is produced, and its dead letter fits.
func TestPublishSizeDiscipline(t *testing.T) {
	topics := wire.DefaultTopics()
	brokers := streamtest.StartBroker(t, 2, topics.All()...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// No configured limit: the broker's (1048588 in kfake, as in Kafka)
	// and the 1 MiB default bound the messages.
	p, err := NewPublisher(PublisherConfig{Brokers: brokers, Topics: topics, LabelFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var raws [][]byte
	for i := range 40 {
		raws = append(raws, bigBag(fmt.Sprintf("big-%02d", i), 226_000))
	}
	tooBig := bigBag("too-big", 1<<20) // fits no request once key and headers are added
	raws = append(raws, tooBig)
	acc, rej, err := p.PublishRaw(ctx, raws)
	if err != nil {
		t.Fatal(err)
	}
	if len(acc) != 40 || acc[0] != "big-00" || acc[39] != "big-39" {
		t.Errorf("accepted %v, want big-00 to big-39 in order", acc)
	}
	if len(rej) != 1 || rej[0].Index != 40 || rej[0].Reason != wire.ReasonOversize || !errors.Is(rej[0].Err(), ErrTooLarge) {
		t.Fatalf("rejections %+v, want the last bag as oversize (ErrTooLarge)", rej)
	}
	var tl *TooLargeError
	if !errors.As(rej[0].Err(), &tl) || tl.ID != "too-big" || tl.Size <= tl.Limit || tl.Limit != kafkaio.RecordLimit(kafkaio.DefaultMaxMessageBytes) {
		t.Errorf("TooLargeError %+v", tl)
	}
	if s := p.Stats(); s.Published != 40 || s.Rejected[wire.ReasonOversize] != 1 {
		t.Errorf("stats %+v", s)
	}
	count := map[string]int{}
	var dead []kafka.Message
	for _, topic := range []string{topics.Annotate, topics.Train, topics.DeadLetter} {
		err := kafkaio.Tail(ctx, brokers, kafkasec.Conn{}, topic, func(m kafka.Message) error {
			count[topic]++
			if topic == topics.DeadLetter {
				dead = append(dead, m)
			}
			if (topic == topics.DeadLetter && count[topic] == 1) || count[topic] == 40 {
				return kafkaio.ErrStop
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var d wire.DeadLetter
	if err := json.Unmarshal(dead[0].Value, &d); err != nil || len(dead[0].Value) > kafkaio.DefaultMaxMessageBytes ||
		d.Stage != wire.StageIngest || d.Reason != wire.ReasonOversize || d.OriginalSize != len(tooBig) || d.OriginalSHA256 == "" {
		t.Errorf("dead letter of %d bytes: %+v %v", len(dead[0].Value), d, err)
	}
}

// TestPublishDatasetRejectsAsDecoding: the bags of a dataset are checked in
// memory, not decoded back from their encoding, and must be rejected for
// the same reasons as their encodings published raw (which are decoded):
// a ragged instance, unsorted or out-of-range labels, an empty bag, an id
// over the schema's 256 characters. Catches PublishDataset publishing a bag
// without checking it, or with another reason than ingest gives its wire
// form.
func TestPublishDatasetRejectsAsDecoding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ds := &mil.Dataset{Name: "toy", Dim: 2, Classes: []string{"a", "b"}, Bags: []mil.Bag{
		{ID: "ok", Instances: [][]float64{{1, 2}}, Labels: []int{1}},
		{ID: "ragged", Instances: [][]float64{{1, 2}, {3}}},
		{ID: "unsorted", Instances: [][]float64{{1, 2}}, Labels: []int{1, 0}},
		{ID: "range", Instances: [][]float64{{1, 2}}, Labels: []int{2}},
		{ID: "empty", Instances: [][]float64{}},
		{ID: strings.Repeat("x", 257), Instances: [][]float64{{1, 2}}},
		{ID: "ok-unlabeled", Instances: [][]float64{{1, 2}, {3, 4}}},
	}}
	want := map[int]wire.Reason{1: wire.ReasonDimension, 2: wire.ReasonLabels, 3: wire.ReasonLabels, 4: wire.ReasonEmptyBag, 5: wire.ReasonSchema}
	reasons := func(rej []Rejection) map[int]wire.Reason {
		out := map[int]wire.Reason{}
		for _, r := range rej {
			out[r.Index] = r.Reason
		}
		return out
	}
	p, _, _ := startPublisher(t, PublisherConfig{LabelFraction: 1})
	rej, err := p.PublishDataset(ctx, ds, ds.Bags)
	if err != nil {
		t.Fatal(err)
	}
	if got := reasons(rej); !reflect.DeepEqual(got, want) {
		t.Errorf("PublishDataset rejected %v, want %v", got, want)
	}
	var raws [][]byte
	for i := range ds.Bags {
		raw, _ := json.Marshal(wire.NewBagMessage(&ds.Bags[i], ds.Name, ds.Dim, ds.Classes, false))
		raws = append(raws, raw)
	}
	acc, rej, err := p.PublishRaw(ctx, raws)
	if err != nil {
		t.Fatal(err)
	}
	if got := reasons(rej); !reflect.DeepEqual(got, want) {
		t.Errorf("PublishRaw rejected %v, want %v", got, want)
	}
	if want := []string{"ok", "ok-unlabeled"}; !slices.Equal(acc, want) {
		t.Errorf("PublishRaw accepted %q, want %q", acc, want)
	}
	if s := p.Stats(); s.Published != 4 || s.Labeled != 2 {
		t.Errorf("stats %+v, want 4 published, 2 labeled", s)
	}
}

// TestPublishProtobuf: with --wire-format protobuf, the bags of a dataset
// and the bags given as JSON lines reach both topics in the binary
// encoding, named so by their content-type header, and decode there to
// what their JSON decodes to; invalid ones are rejected for the reasons
// JSON gives and dead-lettered as JSON with the original. Catches a binary
// message sent under the JSON content type (or the reverse), a bag lost
// or altered in the transcoding, and a check skipped on the binary path.
func TestPublishProtobuf(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ds := &mil.Dataset{Name: "toy", Dim: 2, Classes: []string{"a", "b"}, Bags: []mil.Bag{
		{ID: "ds-labeled", Instances: [][]float64{{1, 2}, {0.1, -3e-9}}, Labels: []int{1}},
		{ID: "ds-negative", Instances: [][]float64{{1, 2}}, Labels: []int{}},
		{ID: "ds-ragged", Instances: [][]float64{{1, 2}, {3}}},
		{ID: "ds-unlabeled", Instances: [][]float64{{5, 6}}},
	}}
	p, brokers, topics := startPublisher(t, PublisherConfig{LabelFraction: 1, Format: wire.FormatProtobuf})
	rej, err := p.PublishDataset(ctx, ds, ds.Bags)
	if err != nil || len(rej) != 1 || rej[0].Index != 2 || rej[0].Reason != wire.ReasonDimension {
		t.Fatalf("PublishDataset: %+v %v, want ds-ragged rejected for its dimension", rej, err)
	}
	lines := [][]byte{
		[]byte(`{"schema_version":1,"id":"raw-labeled","dim":2,"instances":[[0.5,1e-300]],"classes":["a","b"],"labels":[0,1]}`),
		[]byte(`{"schema_version":1,"id":"raw-nan","dim":2,"instances":[[0.5,"NaN"]]}`),
		[]byte(`{"schema_version":1,"id":"raw-unlabeled","source":"s","dim":1,"instances":[[7],[8]]}`),
	}
	acc, rej, err := p.PublishRaw(ctx, lines)
	if err != nil || len(rej) != 1 || rej[0].Index != 1 || rej[0].Reason != wire.ReasonNonFinite {
		t.Fatalf("PublishRaw: %+v %v, want raw-nan rejected as non_finite", rej, err)
	}
	if want := []string{"raw-labeled", "raw-unlabeled"}; !slices.Equal(acc, want) {
		t.Errorf("PublishRaw accepted %q, want %q", acc, want)
	}
	// What each bag must decode to: its JSON, decoded.
	v, _ := wire.NewValidator(0)
	want := map[string]*wire.BagMessage{}
	for _, i := range []int{0, 1, 3} {
		raw, _ := json.Marshal(wire.NewBagMessage(&ds.Bags[i], ds.Name, ds.Dim, ds.Classes, false))
		want[ds.Bags[i].ID], _ = v.DecodeBag(raw)
	}
	for _, i := range []int{0, 2} {
		want[map[int]string{0: "raw-labeled", 2: "raw-unlabeled"}[i]], _ = v.DecodeBag(lines[i])
	}
	wantTrain := map[string]bool{"ds-labeled": true, "ds-negative": true, "raw-labeled": true}
	for topic, n := range map[string]int{topics.Annotate: len(want), topics.Train: len(wantTrain)} {
		got := 0
		err := kafkaio.Tail(ctx, brokers, kafkasec.Conn{}, topic, func(m kafka.Message) error {
			got++
			if ct := kafkaio.ContentType(m.Headers); ct != wire.ContentTypeProtobuf {
				t.Errorf("%s %s: content type %q", topic, m.Key, ct)
			}
			bm, err := v.DecodeBagAs(kafkaio.ContentType(m.Headers), m.Value)
			if err != nil {
				t.Errorf("%s %s: %v", topic, m.Key, err)
			} else if w := want[bm.ID]; !reflect.DeepEqual(bm, w) || (topic == topics.Train && !wantTrain[bm.ID]) {
				t.Errorf("%s: got %+v, want %+v", topic, bm, w)
			}
			if got == n {
				return kafkaio.ErrStop
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Two dead letters, JSON both: ds-ragged's original is binary (the
	// header says so), raw-nan's the JSON line given.
	dead := 0
	err = kafkaio.Tail(ctx, brokers, kafkasec.Conn{}, topics.DeadLetter, func(m kafka.Message) error {
		dead++
		var d wire.DeadLetter
		if ct := kafkaio.ContentType(m.Headers); ct != wire.ContentTypeJSON {
			t.Errorf("dead letter content type %q", ct)
		}
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatal(err)
		}
		var orig string
		for _, h := range m.Headers {
			if h.Key == wire.HeaderOriginalContentType {
				orig = string(h.Value)
			}
		}
		switch dead {
		case 1:
			bm, err := v.DecodeBagAs(orig, d.Original)
			if r, _ := wire.ReasonOf(err); d.Reason != wire.ReasonDimension || r != wire.ReasonDimension || orig != wire.ContentTypeProtobuf {
				t.Errorf("dead letter 1: %+v (original %q: %+v %v)", d, orig, bm, err)
			}
		case 2:
			if d.Reason != wire.ReasonNonFinite || string(d.Original) != string(lines[1]) || orig != "" {
				t.Errorf("dead letter 2: %+v (original %q)", d, orig)
			}
			return kafkaio.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
