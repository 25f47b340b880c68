package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/kafkasec"
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
	rej, err := p.PublishRaw(ctx, raws)
	if err != nil {
		t.Fatal(err)
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
		err := kafkaio.Tail(ctx, brokers, kafkasec.Conn{}, topic, "tail-"+topic, func(m kafka.Message) error {
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
