// Package sample picks bags by id, deterministically: an id gets the same
// choice on every run and in every process, whatever the order in which the
// bags arrive. Ingest uses it to choose the bags that keep their labels, the
// retrainer to hold out a slice of its window.
package sample

import "hash/fnv"

// Unit returns a number in [0, 1) that depends on salt and id alone and is
// spread uniformly over ids; Unit(salt, id) < f selects a fraction f of
// the ids, and a different salt an independent one.
func Unit(salt, id string) float64 {
	h := fnv.New64a()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return float64(mix64(h.Sum64())>>11) / (1 << 53)
}

// mix64 is the splitmix64 finalizer: FNV's high bits barely change between
// ids that differ in their last characters, and Unit reads the high bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
