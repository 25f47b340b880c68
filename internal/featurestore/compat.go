package featurestore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrIncompatible marks a model version that cannot replace another on the
// same stream: annotators check every bag against the served model's input
// dimension and class list, so serving such a version dead-letters every
// bag that the other version annotated.
var ErrIncompatible = errors.New("incompatible model versions")

// Compatible reports whether a model described by next can replace the one
// described by cur for the same input: the same input dimension and the same
// classes in the same order (class indices are what bags and annotations
// carry). The error, wrapping ErrIncompatible, lists every difference. It
// compares metadata only; Get verifies that a blob matches its metadata.
func Compatible(cur, next VersionMeta) error {
	var diffs []string
	if cur.Dim != next.Dim {
		diffs = append(diffs, fmt.Sprintf("input dimension %d, %s has %d", next.Dim, name(cur), cur.Dim))
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
