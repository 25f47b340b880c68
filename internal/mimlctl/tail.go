package mimlctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/kafkaview"
	"github.com/mimlstream/mimlstream/internal/media/mediaroot"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// TailCommand is `mimlctl tail TOPIC`: the messages of a topic, one a
// line, readable (annotations, dead letters and bags are recognised) or
// raw with --json; every stored message up to the end, or with --follow
// only the new ones until SIGTERM.
func TailCommand(ctx context.Context, env service.Env, args []string) error {
	fs := cli.NewFlagSet("mimlctl-tail", `Usage: mimlctl tail TOPIC --brokers HOST:PORT [flags]

Prints the messages of TOPIC (annotations, dead-letters, bags, ...), one a
line: every stored message up to the current end of each partition, or with
--follow only the messages written from now on, until interrupted. Readable
text by default; --json prints each message's value as it is (JSON lines,
for jq). It joins no consumer group and commits nothing.

An annotation of a document lists its passages: each one's predicted label
and span in code points, and with --media-root its first words. The words
are not on any topic (a bag carries its passages' hashed terms and spans,
an annotation the spans and the document's SHA-256 and URI), so they are
read from the document under --media-root: the file its URI names, or, for
a document sent inline, the manifest line (*.jsonl at the top of the
folder) whose text has its SHA-256, as the status page's gallery does. A
document not found there, or whose bytes are not the ones annotated, is
said so on the line.`, env.Stderr)
	k := service.DefaultKafka()
	k.Create = false // an observer creates nothing
	k.CheckTimeout = 5 * time.Second
	k.RegisterConn(fs) // its own flags only: it creates no topics, names the one it reads
	follow := fs.Bool("follow", false, "print only new messages, until interrupted")
	asJSON := fs.Bool("json", false, "print each message's value as is (one JSON document a line)")
	limit := fs.Int("max", 0, "stop after this many messages (0: no limit)")
	mediaRoot := fs.String("media-root", "", "`folder` the annotated documents are read from, to show each passage's first words (their media URIs are relative to it; inline documents are found in its *.jsonl manifests; empty: spans only)")
	pos, err := parseArgs(fs, args, nil)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("tail needs exactly one TOPIC, got %s", argsText(pos))
	}
	if *limit < 0 {
		return cli.Usagef("--max %d < 0", *limit)
	}
	conn, err := k.Connect(ctx)
	if err != nil {
		return err
	}
	v := kafkaview.New(k.Brokers, conn)
	var fm Formatter
	if *mediaRoot != "" {
		fm.Root = mediaroot.New(*mediaRoot)
	}
	n := 0
	defer func() {
		if n == 0 && !*follow && ctx.Err() == nil {
			// Nothing printed would look like a hang or a wrong topic.
			fmt.Fprintf(env.Stderr, "mimlctl tail: %s holds no messages\n", pos[0])
		}
	}()
	return v.Read(ctx, pos[0], kafkaview.ReadOptions{FromEnd: *follow, Follow: *follow}, func(m kafka.Message) error {
		var err error
		if *asJSON {
			err = writeRaw(env.Stdout, m.Value)
		} else {
			_, err = io.WriteString(env.Stdout, fm.Format(m)+"\n")
		}
		if err != nil {
			return err
		}
		n++
		if *limit > 0 && n >= *limit {
			return kafkaview.ErrStop
		}
		return nil
	})
}

// writeRaw writes a value on one line; JSON is compacted so that a
// pretty-printed value cannot break the one-message-a-line format.
func writeRaw(w io.Writer, v []byte) error {
	var buf bytes.Buffer
	if json.Valid(v) {
		if err := json.Compact(&buf, v); err != nil {
			return err
		}
	} else {
		// Not JSON: quoted, so that the output stays JSON lines.
		b, _ := json.Marshal(string(v))
		buf.Write(b)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// message is the union of the wire documents, to tell them apart.
type message struct {
	// dead letter
	Reason *wire.Reason `json:"reason"`
	// annotation
	BagID *string `json:"bag_id"`
	// bag, dense or sparse
	Instances       *[][]float64     `json:"instances"`
	SparseInstances *[]mil.SparseVec `json:"sparse_instances"`
}

// FormatMessage renders one message for a person: where it is
// (partition@offset), then what it says; a document's passages by their
// spans only (Formatter.Root unset).
func FormatMessage(m kafka.Message) string { return Formatter{}.Format(m) }

// Formatter renders messages for a person.
type Formatter struct {
	// Root, when set, is where annotated documents are read from, to show
	// each passage's first words.
	Root *mediaroot.Root
}

// wordsShown is how many of a passage's first words a line shows.
const wordsShown = 6

// Format renders one message: where it is (partition@offset), then what
// it says.
func (f Formatter) Format(m kafka.Message) string {
	where := fmt.Sprintf("p%d@%d", m.Partition, m.Offset)
	if ct := contentType(m.Headers); wire.FormatOf(ct) == wire.FormatProtobuf {
		// The binary encoding (--wire-format protobuf): a bag if it
		// decodes strictly as one, else an annotation.
		v, _ := wire.NewValidator(0)
		if b, err := v.DecodeBagProto(m.Value); err == nil {
			return formatBag(where, *b)
		}
		if a, err := wire.DecodeAnnotation(ct, m.Value); err == nil && a.BagID != "" {
			return f.formatAnnotation(where, a)
		}
		return fmt.Sprintf("%s (%d bytes, %s)", where, len(m.Value), ct)
	}
	var probe message
	if err := json.Unmarshal(m.Value, &probe); err != nil {
		return fmt.Sprintf("%s %s (%d bytes, not JSON)", where, quote(m.Value, 60), len(m.Value))
	}
	switch {
	case probe.Reason != nil:
		var d wire.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err == nil {
			return formatDeadLetter(where, d)
		}
	case probe.BagID != nil:
		var a wire.AnnotationMessage
		if err := json.Unmarshal(m.Value, &a); err == nil {
			return f.formatAnnotation(where, a)
		}
	case probe.Instances != nil || probe.SparseInstances != nil:
		var b wire.BagMessage
		if err := json.Unmarshal(m.Value, &b); err == nil {
			return formatBag(where, b)
		}
	}
	return fmt.Sprintf("%s %s", where, quote(m.Value, 120))
}

func (f Formatter) formatAnnotation(where string, a wire.AnnotationMessage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s@%s %s: bag {%s}", where, a.AnnotatedAt.UTC().Format(time.RFC3339), a.BagID, a.Model, a.ModelVersion,
		a.Mode, strings.Join(names(a.BagLabels, a.Classes), ", "))
	if isDocument(a) {
		b.WriteString(f.passages(a))
	} else if len(a.InstanceLabels) > 0 {
		fmt.Fprintf(&b, " instances [%s]", strings.Join(names(a.InstanceLabels, a.Classes), " "))
	}
	fmt.Fprintf(&b, " %.2fms", a.LatencyMS)
	if a.Annotator != "" {
		fmt.Fprintf(&b, " by %s", a.Annotator)
	}
	return b.String()
}

// isDocument reports whether a is a document's: media, and a code-point
// span for every instance label.
func isDocument(a wire.AnnotationMessage) bool {
	if a.Media == nil || len(a.Regions) == 0 || len(a.Regions) != len(a.InstanceLabels) {
		return false
	}
	for _, r := range a.Regions {
		if r.Span == nil {
			return false
		}
	}
	return true
}

// passages renders a document's passages: label, span and, with a media
// root, first words; or why the words could not be read.
func (f Formatter) passages(a wire.AnnotationMessage) string {
	labels := names(a.InstanceLabels, a.Classes)
	var spans []text.Span
	var doc, missing string
	if f.Root != nil {
		raw, err := f.Root.Document(a.Media)
		if err == nil {
			spans, doc, err = Passages(&a, []byte(raw))
		}
		if err != nil {
			missing = err.Error()
		}
	}
	parts := make([]string, len(a.Regions))
	for i, r := range a.Regions {
		parts[i] = fmt.Sprintf("%s [%d,%d)", labels[i], r.Span.Start, r.Span.End)
		if spans != nil {
			parts[i] += fmt.Sprintf(" %q", firstWords(spans[i].Of(doc), wordsShown))
		}
	}
	s := fmt.Sprintf(" passages [%s]", strings.Join(parts, " | "))
	if missing != "" {
		s += " (no words: " + missing + ")"
	}
	return s
}

// names maps class indices to names; an index outside the list (-1 marks
// an instance without a label) is shown as "-".
func names(idx []int, classes []string) []string {
	out := make([]string, len(idx))
	for i, c := range idx {
		if c >= 0 && c < len(classes) {
			out[i] = classes[c]
		} else {
			out[i] = "-"
		}
	}
	return out
}

func formatDeadLetter(where string, d wire.DeadLetter) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s DEAD LETTER %s at %s", where, d.At.UTC().Format(time.RFC3339), d.Reason, d.Stage)
	if d.Key != "" {
		fmt.Fprintf(&b, " key=%s", d.Key)
	}
	if d.Topic != "" {
		fmt.Fprintf(&b, " from %s/p%d@%d", d.Topic, d.Partition, d.Offset)
	}
	fmt.Fprintf(&b, ": %s (original %d bytes: %s)", d.Error, d.OriginalSize, quote(d.Original, 60))
	return b.String()
}

func formatBag(where string, m wire.BagMessage) string {
	s := fmt.Sprintf("%s bag %s dim %d, %d instances", where, m.ID, m.Dim, m.Bag().Len())
	if m.SparseInstances != nil {
		s += " (sparse)"
	}
	if m.Labels != nil {
		s += fmt.Sprintf(", labels {%s}", strings.Join(names(m.Labels, m.Classes), ", "))
	}
	if m.Source != "" {
		s += " from " + m.Source
	}
	return s
}

// quote shows at most n bytes of b as a quoted string.
func quote(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%q...", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

// contentType returns the content-type header of a message ("" if none).
func contentType(h []kafka.Header) string {
	for _, x := range h {
		if x.Key == wire.HeaderContentType {
			return string(x.Value)
		}
	}
	return ""
}
