package mimlctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// PassagesCommand shows an annotated document: each passage's predicted
// label and first words, and, with --html, the document with every
// passage highlighted in its label's colour.
func PassagesCommand(ctx context.Context, env service.Env, args []string) error {
	fs := cli.NewFlagSet("mimlctl-passages", `Usage: mimlctl passages --annotation FILE --text DOC [--html OUT]

Shows an annotated document: one line per passage of the annotation (its
span in code points, its predicted label, its first words), and with --html
a page of the whole document, each code point on the colour of the label
of the passage whose centre is nearest (windows overlap), with a legend.
FILE holds one annotation as JSON (a line of 'mimlctl tail annotations
--json'; with several lines, --bag picks that bag's). The document must be
the one the annotation names: its SHA-256 is checked against the
annotation's media.`, env.Stderr)
	annotation := fs.String("annotation", "", "annotation `file` (JSON, one a line)")
	bag := fs.String("bag", "", "the bag `id` to show when the file holds several annotations (default: the last)")
	docPath := fs.String("text", "", "the document `file` the annotation's media names")
	out := fs.String("html", "", "also write the highlighted document to this HTML `file`")
	if _, err := parseArgs(fs, args, nil); err != nil {
		return err
	}
	if *annotation == "" || *docPath == "" {
		return cli.Usagef("passages needs --annotation and --text")
	}
	a, err := readAnnotation(*annotation, *bag)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(*docPath)
	if err != nil {
		return err
	}
	spans, doc, err := Passages(a, raw)
	if err != nil {
		return err
	}
	for i, sp := range spans {
		fmt.Fprintf(env.Stdout, "[%d, %d) %s: %s\n", sp.Start, sp.End, className(a.Classes, a.InstanceLabels[i]), firstWords(sp.Of(doc), 8))
	}
	if *out != "" {
		page := text.Highlight(a.BagID, doc, spans, a.InstanceLabels, a.Classes)
		if err := os.WriteFile(*out, []byte(page), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s: bag %s, %d passages\n", *out, a.BagID, len(spans))
	}
	return nil
}

// Passages checks that raw is the document annotation a names (SHA-256)
// and returns its passages' spans, checked against it.
func Passages(a *wire.AnnotationMessage, raw []byte) ([]text.Span, string, error) {
	if a.Media == nil {
		return nil, "", fmt.Errorf("bag %s: the annotation names no media (a bag of vectors from the sender)", a.BagID)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != a.Media.SHA256 {
		return nil, "", fmt.Errorf("bag %s: the document's SHA-256 is not the annotation's %s (%s)", a.BagID, a.Media.SHA256, a.Media.URI)
	}
	doc := string(raw)
	if err := text.CheckUTF8(doc); err != nil {
		return nil, "", err
	}
	if len(a.InstanceLabels) != len(a.Regions) {
		return nil, "", fmt.Errorf("bag %s: %d instance labels for %d passages", a.BagID, len(a.InstanceLabels), len(a.Regions))
	}
	spans := make([]text.Span, len(a.Regions))
	for i, r := range a.Regions {
		if r.Span == nil || r.ByteSpan == nil || r.ByteSpan.End > len(doc) || r.ByteSpan.Start > r.ByteSpan.End {
			return nil, "", fmt.Errorf("bag %s: region %d is no passage of this document", a.BagID, i)
		}
		sp := text.Span{Start: r.Span.Start, End: r.Span.End, ByteStart: r.ByteSpan.Start, ByteEnd: r.ByteSpan.End}
		if n := len([]rune(sp.Of(doc))); n != sp.End-sp.Start {
			return nil, "", fmt.Errorf("bag %s: passage %d's byte and code-point spans disagree", a.BagID, i)
		}
		spans[i] = sp
	}
	return spans, doc, nil
}

func className(classes []string, y int) string {
	if y >= 0 && y < len(classes) {
		return classes[y]
	}
	return fmt.Sprintf("class %d", y)
}

// firstWords returns the first n words of s, with "..." when there are
// more.
func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) <= n {
		return strings.Join(f, " ")
	}
	return strings.Join(f[:n], " ") + " ..."
}
