package eval

import (
	"strconv"
	"strings"

	"github.com/mimlstream/mimlstream/internal/mil"
)

// labelSetKey is the stratum of a bag: its label set.
func labelSetKey(b *mil.Bag) string {
	if b.Labels == nil {
		return "unlabeled"
	}
	parts := make([]string, len(b.Labels))
	for i, l := range b.Labels {
		parts[i] = strconv.Itoa(l)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// mixSeed derives the model seed of one fit from the run seed, the repeat and
// the fold (splitmix64 finaliser), so every fit is reproducible on its own
// and neighbouring (repeat, fold) pairs get unrelated seeds.
func mixSeed(seed int64, repeat, fold int) int64 {
	z := uint64(seed) + 0x9e3779b97f4a7c15*uint64(repeat*1_000_003+fold+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1) // non-negative
}
