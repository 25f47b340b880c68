package featurestore

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mimlstream/mimlstream/internal/media"
)

// ErrIncompatible marks a model version that cannot replace another on the
// same stream: annotators check every bag against the served model's input
// dimension and class list, so serving such a version dead-letters every
// bag that the other version annotated.
var ErrIncompatible = errors.New("incompatible model versions")

// Compatible reports whether a model described by next can replace the one
// described by cur for the same input: the same input dimension, the same
// featurizer (or none on both) and the same classes in the same order (class indices are what bags and annotations
// carry). The error, wrapping ErrIncompatible, lists every difference. It
// compares metadata only; Get verifies that a blob matches its metadata.
func Compatible(cur, next VersionMeta) error {
	var diffs []string
	if cur.Dim != next.Dim {
		diffs = append(diffs, fmt.Sprintf("input dimension %d, %s has %d", next.Dim, name(cur), cur.Dim))
	}
	if err := media.Check(cur.FeaturizerOrZero(), next.FeaturizerOrZero()); err != nil {
		diffs = append(diffs, fmt.Sprintf("featurizer %s, %s has %s", featurizerName(next), name(cur), featurizerName(cur)))
	}
	if !slices.Equal(cur.Classes, next.Classes) {
		diffs = append(diffs, fmt.Sprintf("classes %s, %s has %s", classList(next.Classes), name(cur), classList(cur.Classes)))
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s has %s", ErrIncompatible, name(next), strings.Join(diffs, "; "))
}

func name(m VersionMeta) string {
	if m.Version == "" {
		return "the model"
	}
	return m.Version
}

// classList shows a class list briefly: the count and at most five names.
func classList(c []string) string {
	const shown = 5
	if len(c) <= shown {
		return fmt.Sprintf("%d %q", len(c), c)
	}
	return fmt.Sprintf("%d %q...", len(c), c[:shown])
}

// FeaturizerOrZero returns the version's featurizer, the zero one (vectors
// from the sender) when it has none.
func (m VersionMeta) FeaturizerOrZero() media.Featurizer {
	if m.Featurizer == nil {
		return media.Featurizer{}
	}
	return *m.Featurizer
}

func featurizerName(m VersionMeta) string {
	if m.Featurizer == nil {
		return "none (vectors from the sender)"
	}
	return m.Featurizer.String()
}
