package mimlctl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

func TestFormatMessage(t *testing.T) {
	tests := []struct {
		value string
		want  string
	}{
		{`{"schema_version":1,"id":"b1","dim":2,"instances":[[1,2],[3,4]],"classes":["a","b"],"labels":[1],"source":"toy"}`,
			"p2@7 bag b1 dim 2, 2 instances, labels {b} from toy"},
		{`{"schema_version":1,"id":"s1","dim":9,"sparse_instances":[{"idx":[0,8],"val":[1,2]},{"idx":[],"val":[]},{"idx":[3],"val":[1]}]}`,
			"p2@7 bag s1 dim 9, 3 instances (sparse)"},
		{`{"bag_id":"b1","model":"orlr","model_version":"v2","mode":"transductive","classes":["a","b"],"bag_labels":[0,5],"bag_scores":[1,0],"annotated_at":"2026-01-01T00:00:00Z","latency_ms":0.5}`,
			"p2@7 2026-01-01T00:00:00Z b1 orlr@v2 transductive: bag {a, -} 0.50ms"},
		{`{"reason":"oversize","error":"too big","stage":"ingest","partition":0,"offset":-1,"original":"eHl6","original_size":9000,"at":"2026-01-01T00:00:00Z"}`,
			`p2@7 2026-01-01T00:00:00Z DEAD LETTER oversize at ingest: too big (original 9000 bytes: "xyz")`},
		{`{"something":"else"}`, `p2@7 "{\"something\":\"else\"}"`},
		{"\x00binary", `p2@7 "\x00binary" (7 bytes, not JSON)`},
	}
	for _, tc := range tests {
		got := FormatMessage(kafka.Message{Partition: 2, Offset: 7, Value: []byte(tc.value)})
		if got != tc.want {
			t.Errorf("FormatMessage(%s)\n got %s\nwant %s", tc.value, got, tc.want)
		}
	}
}

// TestFormatMessageProtobuf: a bag and an annotation in the binary
// encoding (content-type application/x-protobuf) are shown as their JSON
// forms are. Catches the tail printing binary messages as unreadable
// bytes, or taking a bag for an annotation.
func TestFormatMessageProtobuf(t *testing.T) {
	bin := []kafka.Header{{Key: wire.HeaderContentType, Value: []byte(wire.ContentTypeProtobuf)}}
	bag := wire.BagMessage{SchemaVersion: 1, ID: "b1", Source: "toy", Dim: 2, Instances: [][]float64{{1, 2}, {3, 4}}, Classes: []string{"a", "b"}, Labels: []int{1}}
	sparse := wire.BagMessage{SchemaVersion: 1, ID: "s1", Dim: 9, SparseInstances: []mil.SparseVec{{Idx: []int32{0, 8}, Val: []float64{1, 2}}, {Idx: []int32{3}, Val: []float64{1}}}}
	ann, err := wire.AnnotationMessage{SchemaVersion: 1, BagID: "b1", Model: "orlr", ModelVersion: "v2", Mode: "transductive", Classes: []string{"a", "b"},
		BagLabels: []int{0, 5}, BagScores: []float64{1, 0}, AnnotatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), LatencyMS: 0.5}.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		value []byte
		want  string
	}{
		{bag.AppendProto(nil), "p2@7 bag b1 dim 2, 2 instances, labels {b} from toy"},
		{sparse.AppendProto(nil), "p2@7 bag s1 dim 9, 2 instances (sparse)"},
		{ann, "p2@7 2026-01-01T00:00:00Z b1 orlr@v2 transductive: bag {a, -} 0.50ms"},
		{[]byte{0xff}, "p2@7 (1 bytes, application/x-protobuf)"},
	} {
		if got := FormatMessage(kafka.Message{Partition: 2, Offset: 7, Value: tc.value, Headers: bin}); got != tc.want {
			t.Errorf("got %s\nwant %s", got, tc.want)
		}
	}
}

func TestWriteRaw(t *testing.T) {
	var b bytes.Buffer
	for _, v := range []string{"{\n  \"a\": 1\n}", "plain text"} {
		if err := writeRaw(&b, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := b.String(), "{\"a\":1}\n\"plain text\"\n"; got != want {
		t.Errorf("writeRaw = %q, want %q", got, want)
	}
	if strings.Count(b.String(), "\n") != 2 {
		t.Error("not one line per message")
	}
}
