package wire

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestProtoSchemaMatchesFieldNumbers: schemas/mimlstream.proto documents
// the binary encoding; every field it names has the number and wire type
// the hand-written encoder and decoders use, and it names no other. Catches
// the documented schema drifting from the code (a field renumbered, added
// or retyped on one side only), which would make a generated reader
// misread the messages.
func TestProtoSchemaMatchesFieldNumbers(t *testing.T) {
	raw, err := os.ReadFile("../../../schemas/mimlstream.proto")
	if err != nil {
		t.Fatal(err)
	}
	type field struct {
		typ string
		num protowire.Number
	}
	want := map[string]map[string]field{
		"Bag": {"schema_version": {"int64", bagSchemaVersion}, "id": {"string", bagID}, "source": {"string", bagSource}, "dim": {"int64", bagDim},
			"instances": {"repeated Instance", bagInstances}, "classes": {"repeated string", bagClasses}, "labels": {"repeated int64", bagLabels},
			"labeled": {"bool", bagLabeled}, "instance_labels": {"repeated sint64", bagInstanceLabels},
			"sparse_instances": {"repeated SparseInstance", bagSparseInstances},
			"media":            {"Media", bagMedia}, "featurizer": {"Featurizer", bagFeaturizer}, "regions": {"repeated Region", bagRegions}},
		"Instance":       {"features": {"repeated double", instanceFeatures}},
		"SparseInstance": {"idx": {"repeated uint32", sparseIdx}, "val": {"repeated double", sparseVal}},
		"Annotation": {"schema_version": {"int64", annSchemaVersion}, "bag_id": {"string", annBagID}, "source": {"string", annSource},
			"model": {"string", annModel}, "model_version": {"string", annModelVersion}, "model_id": {"string", annModelID}, "mode": {"string", annMode},
			"classes": {"repeated string", annClasses}, "instance_labels": {"repeated sint64", annInstanceLabels},
			"instance_scores": {"repeated Scores", annInstanceScores}, "bag_labels": {"repeated int64", annBagLabels},
			"bag_scores": {"repeated double", annBagScores}, "latency_ms": {"double", annLatencyMS},
			"ingested_at": {"google.protobuf.Timestamp", annIngestedAt}, "annotated_at": {"google.protobuf.Timestamp", annAnnotatedAt},
			"annotator": {"string", annAnnotator},
			"media":     {"Media", annMedia}, "featurizer": {"Featurizer", annFeaturizer}, "regions": {"repeated Region", annRegions}},
		"Media": {"sha256": {"string", mediaSHA256}, "size": {"int64", mediaSize}, "uri": {"string", mediaURI},
			"content_type": {"string", mediaContentType}},
		"Featurizer": {"name": {"string", featurizerName}, "version": {"string", featurizerVersion}, "params": {"repeated Param", featurizerParams}},
		"Param":      {"key": {"string", paramKey}, "value": {"string", paramValue}},
		"Region": {"bbox": {"repeated int64", regionBBox}, "mask": {"Rle", regionMask}, "span": {"Span", regionSpan},
			"byte_span": {"Span", regionByteSpan}},
		"Rle":    {"size": {"repeated int64", rleSize}, "counts": {"repeated int64", rleCounts}},
		"Span":   {"start": {"int64", spanStart}, "end": {"int64", spanEnd}},
		"Scores": {"values": {"repeated double", scoresValues}},
	}
	msgRE := regexp.MustCompile(`(?m)^message (\w+) \{`)
	fieldRE := regexp.MustCompile(`(?m)^\s+((?:repeated )?[\w.]+) (\w+) = (\d+);`)
	got := map[string]map[string]field{}
	locs := msgRE.FindAllSubmatchIndex(raw, -1)
	for i, loc := range locs {
		end := len(raw)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := string(raw[loc[2]:loc[3]])
		got[name] = map[string]field{}
		for _, f := range fieldRE.FindAllSubmatch(raw[loc[1]:end], -1) {
			n, _ := strconv.Atoi(string(f[3]))
			got[name][string(f[2])] = field{string(f[1]), protowire.Number(n)}
		}
	}
	for msg, fields := range want {
		for name, f := range fields {
			if g, ok := got[msg][name]; !ok || g != f {
				t.Errorf("%s.%s: schema has %+v (present %v), code uses %+v", msg, name, g, ok, f)
			}
		}
		for name := range got[msg] {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s.%s: in the schema, not in the code", msg, name)
			}
		}
	}
	for msg := range got {
		if _, ok := want[msg]; !ok {
			t.Errorf("message %s: in the schema, not in the code", msg)
		}
	}
}
