package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/schemaref"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
)

// differ compares the typed decoder with the reference on one message and
// returns what differs ("" when they agree): the verdict, the reason, and,
// when both accept, the message (floats compared bit for bit, so a lost
// sign of zero counts). Every test of this file goes through it; it is
// what catches the typed decoder accepting, rejecting or classifying a
// message otherwise than the JSON Schema validator.
func differ(v *wire.Validator, ref *schemaref.Validator, raw []byte) string {
	got, err := v.DecodeBag(raw)
	want, wantErr := ref.DecodeBag(raw)
	gr, gok := wire.ReasonOf(err)
	wr, wok := wire.ReasonOf(wantErr)
	switch {
	case (err == nil) != (wantErr == nil) || gr != wr || gok != wok:
		return fmt.Sprintf("typed decoder: %q %v; reference: %q %v", gr, err, wr, wantErr)
	case err != nil:
		return ""
	}
	return sameMessage(got, want)
}

// sameMessage compares two decoded messages, floats by their bits.
func sameMessage(got, want *wire.BagMessage) string {
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("typed decoder %+v, reference %+v", got, want)
	}
	for k := range want.Instances {
		for j, x := range want.Instances[k] {
			if math.Float64bits(got.Instances[k][j]) != math.Float64bits(x) {
				return fmt.Sprintf("instance %d feature %d: %v, reference %v", k, j, got.Instances[k][j], x)
			}
		}
	}
	for k := range want.SparseInstances {
		for e, x := range want.SparseInstances[k].Val {
			if math.Float64bits(got.SparseInstances[k].Val[e]) != math.Float64bits(x) {
				return fmt.Sprintf("sparse instance %d value %d: %v, reference %v", k, e, got.SparseInstances[k].Val[e], x)
			}
		}
	}
	return ""
}

// bag writes a bag message with the given members after the required
// ones; members replaces a required one of the same name.
func bag(members ...string) string {
	req := map[string]string{"schema_version": `1`, "id": `"b"`, "dim": `2`, "instances": `[[1,2],[3,4]]`}
	var parts []string
	for _, m := range members {
		name, _, _ := strings.Cut(strings.TrimPrefix(m, `"`), `"`)
		delete(req, name)
		parts = append(parts, m)
	}
	for _, name := range []string{"schema_version", "id", "dim", "instances"} {
		if v, ok := req[name]; ok {
			parts = append([]string{fmt.Sprintf("%q:%s", name, v)}, parts...)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// sparseBag writes a sparse bag message (dim 4) with the given members
// after the required ones; members replaces a required one of the same
// name.
func sparseBag(members ...string) string {
	req := map[string]string{"schema_version": `1`, "id": `"b"`, "dim": `4`, "sparse_instances": `[{"idx":[0,2],"val":[1,2]},{"idx":[3],"val":[-1]}]`}
	var parts []string
	for _, m := range members {
		name, _, _ := strings.Cut(strings.TrimPrefix(m, `"`), `"`)
		delete(req, name)
		parts = append(parts, m)
	}
	for _, name := range []string{"schema_version", "id", "dim", "sparse_instances"} {
		if v, ok := req[name]; ok {
			parts = append([]string{fmt.Sprintf("%q:%s", name, v)}, parts...)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// sparseSeeds are sparse bags on both sides of every rule of a sparse
// instance: the schema's (types, required keys, no other key, idx >= 0
// and at most 2^31-1, idx unique), those it states in words (idx strictly
// ascending, one value per index: schema faults the reference checks
// after the schema), the invariant (idx below dim: dimension), non-finite
// values written as the dense tests write them, both encodings or
// neither, and the precedence of the reasons among them.
func sparseSeeds() []string {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	si := func(insts ...string) string { return `"sparse_instances":[` + strings.Join(insts, ",") + `]` }
	seeds := []string{
		// Valid: one instance, several, empty instances, the largest
		// index, spacing, key order, negative zero.
		sparseBag(), sparseBag(si(`{"idx":[],"val":[]}`)), sparseBag(si(`{"idx":[0],"val":[1]}`, `{"idx":[],"val":[]}`)),
		sparseBag(si(`{"val":[2,3],"idx":[1,3]}`)), sparseBag(si(` { "idx" : [ 0 , 1 ] , "val" : [ -0 , 5e-1 ] } `)),
		sparseBag(`"dim":2147483648`, si(`{"idx":[2147483647],"val":[1]}`)), sparseBag(`"dim":1`, si(`{"idx":[0],"val":[1]}`)),
		sparseBag(si(`{"idx":[-0],"val":[1e-7]}`)), sparseBag(si(`{"idx":[0,1,2,3],"val":[1,2,3,4]}`)),
		sparseBag(`"labels":[0]`, `"classes":["a"]`, `"instance_labels":[0,-1]`, `"source":"s"`),
		// Indices: unsorted, repeated, negative, out of range (of dim and
		// of 32 bits), not integers.
		sparseBag(si(`{"idx":[2,0],"val":[1,2]}`)), sparseBag(si(`{"idx":[1,1],"val":[1,2]}`)), sparseBag(si(`{"idx":[0,-0],"val":[1,2]}`)),
		sparseBag(si(`{"idx":[0,2,1],"val":[1,2,3]}`)), sparseBag(si(`{"idx":[-1],"val":[1]}`)), sparseBag(si(`{"idx":[4],"val":[1]}`)),
		sparseBag(si(`{"idx":[0,3],"val":[1,1]}`, `{"idx":[5],"val":[1]}`)), sparseBag(`"dim":2147483648`, si(`{"idx":[2147483648],"val":[1]}`)),
		sparseBag(si(`{"idx":[9223372036854775808],"val":[1]}`)), sparseBag(si(`{"idx":[1.0],"val":[1]}`)), sparseBag(si(`{"idx":[1e0],"val":[1]}`)),
		sparseBag(si(`{"idx":[0.5],"val":[1]}`)), sparseBag(si(`{"idx":["1"],"val":[1]}`)), sparseBag(si(`{"idx":[null],"val":[1]}`)),
		sparseBag(si(`{"idx":["NaN"],"val":[1]}`)), sparseBag(si(`{"idx":[1e999],"val":[1]}`)), sparseBag(si(`{"idx":[1,1.0],"val":[1,2]}`)),
		// Lengths: more indices than values and the reverse; with other
		// faults.
		sparseBag(si(`{"idx":[0,1],"val":[1]}`)), sparseBag(si(`{"idx":[0],"val":[1,2]}`)), sparseBag(si(`{"idx":[],"val":[1]}`)),
		sparseBag(si(`{"idx":[5],"val":[1,2]}`)), sparseBag(si(`{"idx":[1,0],"val":[1]}`)), sparseBag(si(`{"idx":[0,1],"val":[1,"NaN"]}`, `{"idx":[9],"val":[1]}`)),
		// Values: NaN and ±Inf as the dense tests write them (bare:
		// malformed; as strings: non_finite; too large: non_finite), other
		// strings and types (schema).
		sparseBag(si(`{"idx":[0],"val":[NaN]}`)), sparseBag(si(`{"idx":[0],"val":[Infinity]}`)), sparseBag(si(`{"idx":[0],"val":["NaN"]}`)),
		sparseBag(si(`{"idx":[0],"val":[" -Infinity "]}`)), sparseBag(si(`{"idx":[0],"val":["+Inf"]}`)), sparseBag(si(`{"idx":[0],"val":[1e999]}`)),
		sparseBag(si(`{"idx":[0],"val":[-1e309]}`)), sparseBag(si(`{"idx":[0],"val":["1.5"]}`)), sparseBag(si(`{"idx":[0],"val":[null]}`)),
		sparseBag(si(`{"idx":[0],"val":[true]}`)), sparseBag(si(`{"idx":[0],"val":[[1]]}`)), sparseBag(si(`{"idx":[0],"val":[{}]}`)),
		sparseBag(si(`{"idx":[0],"val":[1e-400]}`)), sparseBag(si(`{"idx":[0],"val":[1.7976931348623159e308]}`)),
		// Non-finite outranks schema faults before and after it, and
		// loses to an empty bag and to malformed JSON.
		sparseBag(si(`{"idx":[1,0],"val":[1,2]}`, `{"idx":[0],"val":["NaN"]}`)), sparseBag(`"x":1`, si(`{"idx":[0],"val":[1e999]}`)),
		sparseBag(si(`{"idx":[0],"val":["NaN"],"x":1}`)), sparseBag(si(`{"idx":[0],"val":["NaN"]}`, `7`)),
		sparseBag(si(`{"idx":[0],"val":["NaN"]}`), `"instances":[]`), sparseBag(si(`{"idx":[0],"val":["NaN"]}`), `"x":`),
		sparseBag(`"schema_version":2`, si(`{"idx":[7],"val":["Infinity"]}`)), sparseBag(si(`{"idx":[0],"val":[1e999]}`, `{"idx":[0]}`)),
		// The instance objects: keys missing, extra, repeated (escaped
		// too); not objects.
		sparseBag(si(`{"idx":[0]}`)), sparseBag(si(`{"val":[1]}`)), sparseBag(si(`{}`)), sparseBag(si(`{"idx":[0],"val":[1],"x":1}`)),
		sparseBag(si(`{"idx":[0],"val":[1],"idx":[0]}`)), sparseBag(si(`{"idx":[0],"val":[1],"val":[1]}`)), sparseBag(si(`{"idx":[0],"val":[1],"x":1,"x":2}`)),
		sparseBag(si(`{"idx":[0],"val":[1],"x":{"a":1,"a":2}}`)), sparseBag(si(`{"idx":null,"val":[1]}`)), sparseBag(si(`{"idx":[0],"val":null}`)),
		sparseBag(si(`{"idx":0,"val":1}`)), sparseBag(si(`{"idx":{},"val":[1]}`)), sparseBag(si(`{"idx":[0],"val":"1"}`)),
		sparseBag(si(`[0,1]`)), sparseBag(si(`null`)), sparseBag(si(`1`)), sparseBag(si(`{"idx":[0],"val":[1]}`, `[]`)),
		sparseBag(`"sparse_instances":null`), sparseBag(`"sparse_instances":{}`), sparseBag(`"sparse_instances":[]`),
		sparseBag(`"sparse_instances":[]`, `"x":1`), sparseBag(`"sparse_instances":[]`, `"instances":[[1,"NaN"]]`),
		// Both encodings, neither, and the dense form under a sparse dim.
		bag(`"sparse_instances":[{"idx":[0],"val":[1]}]`), bag(`"sparse_instances":[]`), bag(`"instances":[]`, `"sparse_instances":[{"idx":[0],"val":[1]}]`),
		bag(`"sparse_instances":null`), sparseBag(`"instances":[[1,2,3,4]]`), sparseBag(`"instances":null`),
		`{"schema_version":1,"id":"b","dim":4}`, `{"schema_version":1,"id":"b","dim":4,"labels":[0],"classes":["a"]}`,
		sparseBag(`"sparse_instances":[{"idx":[0],"val":[1]}]`, `"sparse_instances":[{"idx":[0],"val":[1]}]`),
		// Dimension and labels after the schema: index against dim,
		// instance labels per sparse instance.
		sparseBag(`"dim":3`), sparseBag(`"dim":0`), sparseBag(`"dim":"4"`), sparseBag(`"instance_labels":[0]`),
		sparseBag(`"instance_labels":[0,1]`, `"classes":["a","b"]`), sparseBag(`"instance_labels":[0,2]`, `"classes":["a","b"]`),
		sparseBag(`"dim":3`, `"labels":[5]`, `"classes":["a"]`), sparseBag(`"labels":[1]`, `"classes":["a"]`),
		sparseBag(`"dim":1`, si(`{"idx":[1],"val":[1]}`), `"instance_labels":[0,1]`),
		// Deep nesting in each place of a sparse instance.
		sparseBag(si(`{"idx":[0],"val":[` + deep(9996) + `]}`)), sparseBag(si(`{"idx":[0],"val":[` + deep(9997) + `]}`)),
		sparseBag(si(`{"idx":[` + deep(9996) + `],"val":[1]}`)), sparseBag(si(`{"idx":[` + deep(9997) + `],"val":[1]}`)),
		sparseBag(si(`{"idx":[0],"val":[1],"x":` + deep(9997) + `}`)), sparseBag(si(`{"idx":[0],"val":[1],"x":` + deep(9998) + `}`)),
		sparseBag(si(deep(9998))), sparseBag(si(deep(9999))), sparseBag(si(`{"idx":` + deep(9997) + `,"val":[1]}`)),
		sparseBag(si(`{"idx":` + deep(9998) + `,"val":[1]}`)),
	}
	// Every prefix of one sparse message: truncation inside each part of
	// a sparse instance.
	full := sparseBag(si(`{"idx":[0,3],"val":[1.5e-3,-0]}`, `{"val":[],"idx":[]}`), `"instance_labels":[0,-1]`, `"classes":["a"]`)
	for n := range len(full) {
		seeds = append(seeds, full[:n])
	}
	return seeds
}

// bagSeeds are messages on both sides of every rule of the schema and of
// the invariants, and of the JSON grammar: the seed corpus of the fuzz
// test and the cases of TestDecodeBagMatchesReference.
func bagSeeds(t testing.TB) []string {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	seeds := []string{
		// The grammar: empty, truncated, trailing data, bad literals and
		// numbers, white space.
		``, ` `, `{`, `}`, `{}`, `[]`, `null`, `1`, `"bag"`, `tru`, `{"a":1,`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":}`,
		`{"a":1 "b":2}`, `{} {}`, `{}x`, `{}]`, ` {} `, "\t\n\r{}\r\n", "\u00a0{}", "\xef\xbb\xbf{}",
		`[1,]`, `[,1]`, `[1 2]`, `[1,2`, `{"schema_version":1,"id":"x","dim":2,"instances":[[1,2]`,
		bag() + ` `, bag() + `x`, bag() + bag(), bag()[:len(bag())-1],
		bag(`"dim":01`), bag(`"dim":-`), bag(`"dim":1.`), bag(`"dim":.5`), bag(`"dim":1e`), bag(`"dim":1e+`), bag(`"dim":+1`),
		bag(`"instances":[[1,2],[3,4.]]`), bag(`"instances":[[1,2],[3,0x4]]`), bag(`"instances":[[1,2],[3,4]`), bag(`"instances":[[1,2],[3,4]]]`),
		bag(`"labels":nul`, `"classes":["a"]`), bag(`"labels":nullx`, `"classes":["a"]`), bag(`"x":truex`), bag(`"x":falsey`),
		// NaN-like tokens: bare (malformed), as strings (non_finite), and
		// strings that are not NaN (schema).
		bag(`"instances":[[1,NaN]]`), bag(`"instances":[[1,Infinity]]`), bag(`"instances":[[1,-Infinity]]`), bag(`"instances":[[1,-inf]]`),
		bag(`"instances":[[1,"NaN"]]`), bag(`"instances":[[1,"nan"]]`), bag(`"instances":[[1," -Infinity "]]`), bag(`"instances":[[1,"+Inf"]]`),
		bag(`"instances":[[1,"\u004eaN"]]`), bag(`"instances":[[1,"1e999"]]`), bag(`"instances":[[1,"0x1p9999"]]`), bag(`"instances":[[1,"1.5"]]`),
		bag(`"instances":[[1,"abc"]]`), bag(`"instances":[[1,""]]`), bag(`"instances":[[1,"1_0"]]`),
		// Non-finite wins over schema faults before and after it, and
		// loses to an empty bag and to malformed JSON.
		bag(`"instances":[true,[1,"NaN"]]`, `"x":1`), bag(`"schema_version":2`, `"instances":[[1,2],[1e999,1]]`), bag(`"instances":[[1,"NaN"]]`, `"x":`),
		bag(`"instances":[[[1]],[1,"Inf"]]`), bag(`"instances":[]`, `"instances":[[1,"NaN"]]`),
		// Numbers: huge, tiny, negative zero, exponents.
		bag(`"instances":[[1e308,2]]`), bag(`"instances":[[1e309,2]]`), bag(`"instances":[[-1e309,2]]`), bag(`"instances":[[1e-400,2]]`),
		bag(`"instances":[[-0,2]]`), bag(`"instances":[[-0.0e-0,2]]`), bag(`"instances":[[0E+0,2]]`), bag(`"instances":[[4.9e-324,2]]`),
		bag(`"instances":[[123456789012345678901234567890,2]]`), bag(`"instances":[[0.1000000000000000055511151231257827,2]]`),
		bag(`"instances":[[1.7976931348623157e308,2]]`), bag(`"instances":[[1.7976931348623159e308,2]]`),
		// Integers: fraction, exponent, sign, range.
		bag(`"schema_version":1.0`), bag(`"schema_version":1e0`), bag(`"schema_version":"1"`), bag(`"schema_version":true`), bag(`"schema_version":-1`),
		bag(`"schema_version":2`), bag(`"schema_version":null`), bag(`"schema_version":[1]`),
		bag(`"dim":2.0`), bag(`"dim":2.5`), bag(`"dim":2e0`), bag(`"dim":0`), bag(`"dim":-0`), bag(`"dim":-2`), bag(`"dim":"2"`), bag(`"dim":null`),
		bag(`"dim":9223372036854775807`), bag(`"dim":9223372036854775808`), bag(`"dim":-9223372036854775809`), bag(`"dim":99999999999999999999`),
		// Strings: ids of every length, escapes, unicode, invalid UTF-8,
		// surrogates.
		bag(`"id":""`), bag(`"id":"` + strings.Repeat("x", 256) + `"`), bag(`"id":"` + strings.Repeat("x", 257) + `"`),
		bag(`"id":"` + strings.Repeat("é", 256) + `"`), bag(`"id":"` + strings.Repeat("é", 257) + `"`),
		bag(`"id":"` + strings.Repeat(`\ud83d\ude00`, 256) + `"`), bag(`"id":"` + strings.Repeat(`\ud83d\ude00`, 257) + `"`),
		bag(`"id":"a\"b\\c\/d\b\f\n\r\t"`), bag(`"id":"\u0000"`), bag(`"id":"\u00e9\u00E9"`), bag(`"id":"caf` + "\u00e9" + `"`),
		bag(`"id":"\ud83d\ude00"`), bag(`"id":"\ud83d"`), bag(`"id":"\ude00"`), bag(`"id":"\ud83dx"`), bag(`"id":"\ud83d\u0041"`),
		bag(`"id":"\ud83d\ud83d\ude00"`), bag(`"id":"\ud83d\n"`), bag(`"id":"\ud83d\uzzzz"`), bag(`"id":"\ud83d\u12"`), bag(`"id":"\\ud83d"`),
		// Surrogate escapes at the bounds of each half, and raw UTF-8
		// (valid and not) after an escape.
		bag(`"id":"\ud800\udc00"`), bag(`"id":"\udbff\udfff"`), bag(`"id":"\ud800\ue000"`), bag(`"id":"\ud800\udbff"`),
		bag(`"id":"\ud7ff\ue000"`), bag(`"id":"\udfff"`), bag(`"id":"\uDBFF\uDFFF"`), bag(`"id":"\u00e9` + "\u00e9\U0001F600" + `"`),
		bag(`"id":"\n` + "\xff" + `"`), bag(`"id":"\t` + "\xc3" + `"`), bag(`"id":"\t\u0001` + "\x01" + `"`), bag(`"id":"\t`),
		bag(`"id":"\x"`), bag(`"id":"\u12g4"`), bag(`"id":"\u12"`), bag("\"id\":\"a\x01b\""), bag("\"id\":\"a\x7fb\""),
		bag("\"id\":\"a\xffb\""), bag("\"id\":\"a\xc3\""), bag("\"id\":\"\xed\xa0\x80\""), bag("\"id\":\"\xef\xbf\xbd\""), bag(`"id":"\ufffd"`),
		bag(`"id":1`), bag(`"id":null`), bag(`"id":["b"]`), bag(`"source":"s"`), bag(`"source":1`), bag(`"source":null`), bag("\"source\":\"\xff\""),
		"{\"schema_version\":1,\"id\":\"b\",\"dim\":2,\"instances\":[[1,2]],\"x\xff\":1}",
		// Repeated keys, plain and escaped, top-level and nested.
		bag(`"id":"x"`, `"id":"y"`), bag(`"id":"x"`, `"\u0069d":"y"`), bag(`"x":1`, `"x":2`), bag(`"x":1`, `"\u0078":2`), bag(`"x":1`, `"y":2`),
		bag(`"x":{"a":1,"a":2}`), bag(`"x":{"a":1,"b":{"a":2}}`), bag(`"x":[{"a":1},{"a":1}]`), bag(`"x":{"":1,"":2}`),
		bag(`"x":{"a\\":1,"a\\\\":2}`), bag(`"classes":["a"]`, `"classes":["a"]`), bag(`"labels":null`, `"classes":["a"]`, `"labels":null`),
		// Extra fields of every type.
		bag(`"x":1`), bag(`"x":null`), bag(`"x":{}`), bag(`"x":[]`), bag(`"x":"s"`), bag(`"X":true`), bag(`"":1`), bag(`"Id":"b"`),
		// Missing required properties, wrong root types.
		`{"id":"b","dim":2,"instances":[[1,2]]}`, `{"schema_version":1,"dim":2,"instances":[[1,2]]}`,
		`{"schema_version":1,"id":"b","instances":[[1,2]]}`, `{"schema_version":1,"id":"b","dim":2}`, `[` + bag() + `]`,
		// Instances: empty, ragged, wrong types.
		bag(`"instances":[]`), bag(`"instances":[[]]`), bag(`"instances":[[1,2],[]]`), bag(`"instances":null`), bag(`"instances":{}`),
		bag(`"instances":[1,2]`), bag(`"instances":[[1,2],[1,2,3]]`), bag(`"instances":[[1],[1,2]]`), bag(`"instances":[[1,2],null]`),
		bag(`"instances":[[1,null]]`), bag(`"instances":[[1,true]]`), bag(`"instances":[[1,{}]]`), bag(`"instances":[[1,[2]]]`),
		bag(`"instances":[ [ 1 , 2 ] , [ 3 , 4 ] ]`), bag(`"instances": [[1,2],[3,4]] `), bag(`"instances":[[1],[2]]`, `"dim":1`),
		bag(`"dim":3`), bag(`"dim":1`), bag(`"dim":3`, `"instances":[[1,2,3],[1,2]]`, `"labels":[5]`, `"classes":["a"]`),
		// Labels and vocabularies.
		bag(`"labels":[0]`), bag(`"labels":null`), bag(`"labels":[]`), bag(`"labels":[0]`, `"classes":["a"]`), bag(`"labels":[1]`, `"classes":["a"]`),
		bag(`"labels":[0,1]`, `"classes":["a","b"]`), bag(`"labels":[1,0]`, `"classes":["a","b"]`), bag(`"labels":[0,0]`, `"classes":["a","b"]`),
		bag(`"labels":[1,1]`, `"classes":["a"]`), bag(`"labels":[0,-0]`, `"classes":["a"]`), bag(`"labels":[-0]`, `"classes":["a"]`),
		bag(`"labels":[-1]`, `"classes":["a"]`), bag(`"labels":[0.0]`, `"classes":["a"]`), bag(`"labels":[1e0]`, `"classes":["a","b"]`),
		bag(`"labels":["0"]`, `"classes":["a"]`), bag(`"labels":0`, `"classes":["a"]`), bag(`"labels":{}`, `"classes":["a"]`), bag(`"labels":true`, `"classes":["a"]`),
		bag(`"labels":[9223372036854775807]`, `"classes":["a"]`), bag(`"labels":[9223372036854775808]`, `"classes":["a"]`),
		bag(`"labels":[0]`, `"classes":[]`), bag(`"labels":[]`, `"classes":[]`), bag(`"labels":null`, `"classes":[]`), bag(`"classes":[]`),
		bag(`"labels":[2,1,0]`, `"classes":["a","b","c"]`), bag(`"labels":[0,2,1,2]`, `"classes":["a","b","c"]`),
		bag(`"classes":["a",1]`), bag(`"classes":["a",null]`), bag(`"classes":"a"`), bag(`"classes":null`), bag(`"classes":["a","a"]`), bag(`"classes":[["a"]]`),
		bag(`"instance_labels":[0,1]`, `"classes":["a","b"]`), bag(`"instance_labels":[-1,-1]`), bag(`"instance_labels":[-2,0]`),
		bag(`"instance_labels":[0]`), bag(`"instance_labels":[0,1,1]`), bag(`"instance_labels":[]`), bag(`"instance_labels":null`),
		bag(`"instance_labels":[0,2]`, `"classes":["a","b"]`), bag(`"instance_labels":[0,5]`), bag(`"instance_labels":[0,1.5]`),
		bag(`"instance_labels":[0,99999999999999999999]`), bag(`"instance_labels":[0,"1"]`),
		bag(`"labels":[0]`, `"classes":["a"]`, `"instance_labels":[0,-1]`, `"source":"s"`),
		// Deep nesting, around encoding/json's limit of 10000 levels, in
		// each place a value can nest.
		deep(64), deep(10000), deep(10001), deepObj(9999), deepObj(10000), deepObj(10001),
		bag(`"x":` + deep(9999)), bag(`"x":` + deep(10000)), bag(`"x":` + deepObj(9999)), bag(`"x":` + deepObj(10000)),
		bag(`"classes":[` + deep(9998) + `]`), bag(`"classes":[` + deep(9999) + `]`),
		bag(`"labels":[`+deep(9998)+`]`, `"classes":["a"]`), bag(`"labels":[`+deep(9999)+`]`, `"classes":["a"]`),
		bag(`"instances":[` + deep(9998) + `]`), bag(`"instances":[` + deep(9999) + `]`),
		bag(`"instances":[[1,` + deep(9997) + `]]`), bag(`"instances":[[1,` + deep(9998) + `]]`),
		bag(`"instances":[[1,` + deepObj(9997) + `]]`), bag(`"instances":[[1,` + deepObj(9998) + `]]`),
		bag(`"id":` + deep(9999)), bag(`"id":` + deep(10000)), bag(`"dim":` + deep(9999)), bag(`"dim":` + deep(10000)),
		bag(`"schema_version":` + deep(10000)), bag(`"instance_labels":[` + deep(9999) + `]`), bag(`"instances":` + deep(10000)),
	}
	seeds = append(seeds, sparseSeeds()...)
	ds := streamtest.SmallDataset(4)
	for i := range ds.Bags {
		ds.Bags[i].Instances[0][0] = 1e-7 // exponent form
		raw, err := json.Marshal(wire.NewBagMessage(&ds.Bags[i], "toy", ds.Dim, ds.Classes, true))
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, string(raw))
		var indented bytes.Buffer
		if err := json.Indent(&indented, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, indented.String())
	}
	// Every prefix of one message: truncated input ends inside each kind
	// of token.
	full := bag(`"source":"s\u00e9"`, `"classes":["a","b"]`, `"labels":[0,1]`, `"instance_labels":[0,-1]`, `"instances":[[1.5e-3,-0],[true,null]]`)
	for n := range len(full) {
		seeds = append(seeds, full[:n])
	}
	// And of one whose extra property nests objects, arrays, escapes and
	// literals: truncation inside the values that are only checked.
	extra := `{"x":{"a":[{"b":"é
"},true,false,null,-1.5e3],"c":{}},"y":[[],{}]}`
	for n := range len(extra) {
		seeds = append(seeds, extra[:n])
	}
	return seeds
}

// TestDecodeBagMatchesReference holds the typed decoder to the reference
// on every seed.
func TestDecodeBagMatchesReference(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	reasons := map[wire.Reason]int{}
	for _, s := range bagSeeds(t) {
		if d := differ(v, ref, []byte(s)); d != "" {
			t.Errorf("%.200q: %s", s, d)
		}
		_, err := v.DecodeBag([]byte(s))
		r, _ := wire.ReasonOf(err)
		reasons[r]++
	}
	// The seeds reach every reason the decoder gives (and acceptance, "").
	for _, r := range []wire.Reason{"", wire.ReasonMalformedJSON, wire.ReasonEmptyBag, wire.ReasonNonFinite, wire.ReasonSchema, wire.ReasonDimension, wire.ReasonLabels} {
		if reasons[r] == 0 {
			t.Errorf("no seed gets reason %q", r)
		}
	}
	t.Logf("reasons of the seeds: %v", reasons)
	// The sparse seeds alone reach them too: each fault of a sparse bag
	// is compared, not just parsed.
	sparse := map[wire.Reason]int{}
	for _, s := range sparseSeeds() {
		_, err := v.DecodeBag([]byte(s))
		r, _ := wire.ReasonOf(err)
		sparse[r]++
	}
	for _, r := range []wire.Reason{"", wire.ReasonMalformedJSON, wire.ReasonEmptyBag, wire.ReasonNonFinite, wire.ReasonSchema, wire.ReasonDimension, wire.ReasonLabels} {
		if sparse[r] == 0 {
			t.Errorf("no sparse seed gets reason %q", r)
		}
	}
	t.Logf("reasons of the sparse seeds: %v", sparse)
}

// TestDecodeBagMatchesReferenceOnMSCV2 decodes every MSCV2 bag, labeled
// and not, with and without instance labels, as the reference does.
func TestDecodeBagMatchesReferenceOnMSCV2(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		t.Fatal(err)
	}
	for i := range ds.Bags {
		b := ds.Bags[i]
		if i%3 == 0 {
			b.Labels = nil
		}
		raw, _ := json.Marshal(wire.NewBagMessage(&b, "mscv2", ds.Dim, ds.Classes, i%2 == 0))
		if d := differ(v, ref, raw); d != "" {
			t.Fatalf("bag %s: %s", b.ID, d)
		}
		if _, err := v.DecodeBag(raw); err != nil {
			t.Fatalf("bag %s: %v", b.ID, err)
		}
	}
}

// TestDecodeBagMatchesReferenceOnGenerated composes messages member by
// member from valid and faulty values, several faults at once, so that the
// precedence of the reasons is exercised beyond the seeds.
func TestDecodeBagMatchesReferenceOnGenerated(t *testing.T) {
	values := map[string][]string{
		"schema_version":  {`1`, `1`, `1`, `2`, `1.0`, `"1"`},
		"id":              {`"b"`, `"b"`, `"b"`, `""`, `7`, `"\u00e9"`},
		"source":          {`"s"`, `null`},
		"dim":             {`2`, `2`, `2`, `3`, `0`, `2.0`, `"2"`},
		"instances":       {`[[1,2]]`, `[[1,2],[3,4]]`, `[[1,2],[3,4]]`, `[]`, `[[1]]`, `[[1,"NaN"]]`, `[[1e999,1]]`, `[[1,"x"]]`, `[[]]`, `[1]`, `[[1,2],[-0,5e-1]]`},
		"classes":         {`["a","b"]`, `["a","b"]`, `[]`, `["a"]`, `[1]`},
		"labels":          {`[0]`, `[1]`, `[0,1]`, `[]`, `null`, `[1,0]`, `[0,0]`, `[2]`, `[-1]`, `[0.5]`},
		"instance_labels": {`[0]`, `[0,1]`, `[-1,1]`, `[]`, `[0,2]`, `[-2,0]`},
		"x":               {`1`, `{"a":[]}`},
	}
	names := []string{"schema_version", "id", "source", "dim", "instances", "classes", "labels", "instance_labels", "x"}
	required := map[string]float64{"schema_version": 0.97, "id": 0.97, "dim": 0.97, "instances": 0.97}
	generatedDiffer(t, rand.New(rand.NewPCG(15, 18)), names, values, required)
}

// TestDecodeBagMatchesReferenceOnGeneratedSparse is the generated test of
// sparse bags: sparse instances from valid and faulty instance objects
// (each fault of a sparse instance, several at once), dim around their
// indices, the dense form now and then beside them.
func TestDecodeBagMatchesReferenceOnGeneratedSparse(t *testing.T) {
	inst := []string{`{"idx":[0,2],"val":[1,2]}`, `{"idx":[1],"val":[-0.5]}`, `{"idx":[],"val":[]}`, `{"val":[3],"idx":[3]}`,
		`{"idx":[2,1],"val":[1,2]}`, `{"idx":[1,1],"val":[1,2]}`, `{"idx":[-1],"val":[1]}`, `{"idx":[4],"val":[1]}`, `{"idx":[0,1],"val":[1]}`,
		`{"idx":[0],"val":["NaN"]}`, `{"idx":[0],"val":[1e999]}`, `{"idx":[0],"val":["x"]}`, `{"idx":[0]}`, `{"idx":[0],"val":[1],"x":1}`,
		`{"idx":[0.5],"val":[1]}`, `[0]`, `{"idx":[3000000000],"val":[1]}`, `{"idx":null,"val":[]}`}
	rng := rand.New(rand.NewPCG(21, 22))
	sparse := make([]string, 0, 40)
	for range 40 {
		var parts []string
		for range 1 + rng.IntN(3) {
			// Valid instances more often than faulty ones.
			k := rng.IntN(len(inst))
			if rng.IntN(2) == 0 {
				k = rng.IntN(4)
			}
			parts = append(parts, inst[k])
		}
		sparse = append(sparse, "["+strings.Join(parts, ",")+"]")
	}
	sparse = append(sparse, `[]`, `null`, `{}`, `[{"idx":[0],"val":[1]}]`, `[{"idx":[0],"val":[1]}]`, `[{"idx":[0],"val":[1]}]`)
	values := map[string][]string{
		"schema_version":   {`1`, `1`, `1`, `2`},
		"id":               {`"b"`, `"b"`, `"b"`, `""`},
		"dim":              {`4`, `4`, `4`, `3`, `1`, `0`, `4.0`},
		"sparse_instances": sparse,
		"instances":        {`[[1,2,3,4]]`, `[]`, `[[1,"NaN"]]`},
		"classes":          {`["a","b"]`, `["a"]`, `[]`},
		"labels":           {`[0]`, `[1]`, `[]`, `null`, `[1,0]`},
		"instance_labels":  {`[0]`, `[0,1]`, `[-1,1,0]`, `[]`, `[0,2]`},
		"x":                {`1`},
	}
	names := []string{"schema_version", "id", "dim", "sparse_instances", "instances", "classes", "labels", "instance_labels", "x"}
	required := map[string]float64{"schema_version": 0.97, "id": 0.97, "dim": 0.97, "sparse_instances": 0.95, "instances": 0.05}
	generatedDiffer(t, rng, names, values, required)
}

// generatedDiffer composes messages member by member, each member present
// with its probability in p (0.3 when not there), holds the typed decoder
// to the reference on each, and logs the reasons reached.
func generatedDiffer(t *testing.T, rng *rand.Rand, names []string, values map[string][]string, p map[string]float64) {
	t.Helper()
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	reasons := map[wire.Reason]int{}
	for range 6000 {
		var members []string
		for _, name := range rng.Perm(len(names)) {
			n := names[name]
			pn, ok := p[n]
			if !ok {
				pn = 0.3
			}
			if rng.Float64() < pn {
				vs := values[n]
				members = append(members, fmt.Sprintf("%q:%s", n, vs[rng.IntN(len(vs))]))
			}
		}
		raw := []byte("{" + strings.Join(members, ",") + "}")
		if d := differ(v, ref, raw); d != "" {
			t.Fatalf("%s: %s", raw, d)
		}
		_, err := v.DecodeBag(raw)
		r, _ := wire.ReasonOf(err)
		reasons[r]++
	}
	t.Logf("reasons: %v", reasons)
}

// TestDecodeBagOversize: the size limit comes first, at one byte over, for
// both.
func TestDecodeBagOversize(t *testing.T) {
	raw := []byte(bag())
	for _, limit := range []int{len(raw) - 1, len(raw), 0} {
		v, _ := wire.NewValidator(limit)
		if d := differ(v, schemaref.MustNew(limit), raw); d != "" {
			t.Errorf("limit %d: %s", limit, d)
		}
		_, err := v.DecodeBag(raw)
		if r, _ := wire.ReasonOf(err); (r == wire.ReasonOversize) != (limit == len(raw)-1) {
			t.Errorf("limit %d for %d bytes: %v", limit, len(raw), err)
		}
	}
	// Oversize outranks malformed.
	v, _ := wire.NewValidator(3)
	if _, err := v.DecodeBag([]byte(`{"a":`)); !strings.Contains(fmt.Sprint(err), "oversize") {
		t.Errorf("a malformed message over the limit: %v", err)
	}
}

// TestDecodeBagRowsIndependent: the rows share one backing array, but an
// append to one cannot overwrite the next; strings do not alias the input.
func TestDecodeBagRowsIndependent(t *testing.T) {
	v, _ := wire.NewValidator(0)
	raw := []byte(bag(`"source":"a source longer than the id"`, `"classes":["a","b"]`, `"labels":[1]`, `"instances":[[1,2],[3,4],[5,6]]`))
	m, err := v.DecodeBag(raw)
	if err != nil {
		t.Fatal(err)
	}
	m.Instances[0] = append(m.Instances[0], 42)
	m.Instances[1] = append(m.Instances[1], 43)
	if !reflect.DeepEqual(m.Instances, [][]float64{{1, 2, 42}, {3, 4, 43}, {5, 6}}) {
		t.Errorf("appending to a row changed another: %v", m.Instances)
	}
	for i := range raw {
		raw[i] = 'z'
	}
	if m.ID != "b" || m.Source != "a source longer than the id" || !reflect.DeepEqual(m.Classes, []string{"a", "b"}) {
		t.Errorf("decoded strings changed with the input: %+v", m)
	}
}

// FuzzDecodeBag is the differential fuzz test of the typed decoder against
// the reference:
//
//	go test -run '^$' -fuzz FuzzDecodeBag -fuzztime 5m ./internal/stream/wire/
func FuzzDecodeBag(f *testing.F) {
	for _, s := range bagSeeds(f) {
		f.Add([]byte(s))
	}
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if d := differ(v, ref, raw); d != "" {
			t.Fatal(d)
		}
	})
}

// checkEncodedDiffer compares CheckEncoded on m with the reference on m's
// wire form; a message json.Marshal cannot write must be non_finite.
func checkEncodedDiffer(v *wire.Validator, ref *schemaref.Validator, m *wire.BagMessage) string {
	raw, merr := json.Marshal(m)
	got, err := v.CheckEncoded(m, len(raw))
	gr, _ := wire.ReasonOf(err)
	if merr != nil {
		if gr != wire.ReasonNonFinite {
			return fmt.Sprintf("json.Marshal fails (%v) but CheckEncoded says %q %v", merr, gr, err)
		}
		return ""
	}
	want, wantErr := ref.DecodeBag(raw)
	wr, _ := wire.ReasonOf(wantErr)
	switch {
	case (err == nil) != (wantErr == nil) || gr != wr:
		return fmt.Sprintf("%s: CheckEncoded %q %v; reference %q %v", raw, gr, err, wr, wantErr)
	case err != nil:
		return ""
	}
	if d := sameMessage(got, want); d != "" {
		return fmt.Sprintf("%s: %s", raw, d)
	}
	return ""
}

// TestCheckEncodedMatchesReference: ingest checks the bags of a dataset in
// memory instead of decoding their encoding; it must reach the verdict and
// reason the reference reaches on the encoding, and return the message the
// reference decodes. Catches a check of the Go value that forgets how
// json.Marshal writes it (omitempty, null, U+FFFD).
func TestCheckEncodedMatchesReference(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	cases := []wire.BagMessage{
		{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{1, 2}}},
		{SchemaVersion: 2, ID: "b", Dim: 2, Instances: [][]float64{{1, 2}}},
		{SchemaVersion: 1, ID: "", Dim: 2, Instances: [][]float64{{1, 2}}},
		{SchemaVersion: 1, ID: strings.Repeat("é", 256), Dim: 1, Instances: [][]float64{{1}}},
		{SchemaVersion: 1, ID: strings.Repeat("é", 257), Dim: 1, Instances: [][]float64{{1}}},
		{SchemaVersion: 1, ID: strings.Repeat("\xff", 256), Source: "s\xfe", Dim: 1, Instances: [][]float64{{1}}, Classes: []string{"a\xc3"}, Labels: []int{0}},
		{SchemaVersion: 1, ID: strings.Repeat("\xff", 257), Dim: 1, Instances: [][]float64{{1}}},
		{SchemaVersion: 1, ID: "b", Dim: 0, Instances: [][]float64{{1}}},
		{SchemaVersion: 1, ID: "b", Dim: 1},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{nil}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{}}},
		{SchemaVersion: 1, ID: "b", Dim: 2, Instances: [][]float64{{1, 2}, {3}}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{math.NaN()}}},
		{SchemaVersion: 3, ID: "", Dim: 1, Instances: [][]float64{{1}, {math.Inf(-1)}}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{math.Copysign(0, -1)}}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Labels: []int{0}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Labels: []int{}, Classes: []string{}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Labels: []int{}, Classes: []string{"a"}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Labels: []int{1}, Classes: []string{"a"}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Labels: []int{-1}, Classes: []string{"a"}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Labels: []int{0, 0}, Classes: []string{"a"}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Labels: []int{1, 0}, Classes: []string{"a", "b"}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, Classes: []string{"a"}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, InstanceLabels: []int{}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, InstanceLabels: []int{-1}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, InstanceLabels: []int{-2}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, InstanceLabels: []int{0, 0}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, InstanceLabels: []int{1}, Classes: []string{"a"}},
		{SchemaVersion: 1, ID: "b", Dim: 1, Instances: [][]float64{{1}}, InstanceLabels: []int{5}},
	}
	for i := range cases {
		if d := checkEncodedDiffer(v, ref, &cases[i]); d != "" {
			t.Errorf("case %d: %s", i, d)
		}
	}
	// Random messages near the valid ones.
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(vs ...int) int { return vs[rng.IntN(len(vs))] }
	for range 8000 {
		m := wire.BagMessage{SchemaVersion: pick(1, 1, 1, 0, 2), ID: []string{"b", "b", "", "\xff", "é"}[rng.IntN(5)], Dim: pick(2, 2, 2, 1, 0)}
		if rng.IntN(20) > 0 {
			m.Instances = [][]float64{}
			for range rng.IntN(4) {
				row := make([]float64, pick(2, 2, 2, 1, 0))
				for j := range row {
					row[j] = []float64{0.5, -1, 0, math.NaN(), math.Inf(1), 1e300}[pick(0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 5)]
				}
				if rng.IntN(30) == 0 {
					row = nil
				}
				m.Instances = append(m.Instances, row)
			}
		}
		m.Classes = [][]string{nil, {}, {"a"}, {"a", "b"}, {"a", "b", "c"}}[rng.IntN(5)]
		if rng.IntN(2) == 0 {
			m.Labels = []int{}
			for range rng.IntN(3) {
				m.Labels = append(m.Labels, pick(0, 1, 2, -1))
			}
		}
		if rng.IntN(3) == 0 {
			m.InstanceLabels = []int{}
			for range rng.IntN(4) {
				m.InstanceLabels = append(m.InstanceLabels, pick(-1, 0, 1, 2, -2))
			}
		}
		if d := checkEncodedDiffer(v, ref, &m); d != "" {
			t.Fatalf("%+v: %s", m, d)
		}
	}
	// And the size limit, on the encoded size.
	lim, _ := wire.NewValidator(10)
	if _, err := lim.CheckEncoded(&cases[0], 11); !strings.Contains(fmt.Sprint(err), "oversize") {
		t.Errorf("11 bytes over a 10-byte limit: %v", err)
	}
	if _, err := lim.CheckEncoded(&cases[0], 10); err != nil {
		t.Errorf("10 bytes within a 10-byte limit: %v", err)
	}
}

// TestCheckEncodedMatchesReferenceSparse is TestCheckEncodedMatchesReference
// for sparse bags: ingest checks a sparse dataset's bags in memory too.
// Catches a nil index or value array taken for an empty one (json.Marshal
// writes null), an order, length or range fault missed or given another
// reason, and a bag with both encodings or neither let through.
func TestCheckEncodedMatchesReferenceSparse(t *testing.T) {
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	sv := func(idx []int32, val []float64) mil.SparseVec { return mil.SparseVec{Idx: idx, Val: val} }
	one := []mil.SparseVec{sv([]int32{0, 2}, []float64{1, -2})}
	cases := []wire.BagMessage{
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: one},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{}, []float64{})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv(nil, nil)}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{}, nil)}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: one, Instances: [][]float64{{1, 0, -2}}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: one, Instances: [][]float64{}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{}, Instances: [][]float64{{1, 0, -2}}},
		{SchemaVersion: 1, ID: "b", Dim: 2, SparseInstances: one},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{2, 0}, []float64{1, 2})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{1, 1}, []float64{1, 2})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{-1}, []float64{1})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{0, 1}, []float64{1})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{0}, []float64{math.NaN()})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{5, 0}, []float64{math.Inf(1), 1})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: []mil.SparseVec{sv([]int32{0}, []float64{math.Copysign(0, -1)})}},
		{SchemaVersion: 1, ID: "b", Dim: math.MaxInt32 + 1, SparseInstances: []mil.SparseVec{sv([]int32{math.MaxInt32}, []float64{1})}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: one, InstanceLabels: []int{0}, Classes: []string{"a"}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: one, InstanceLabels: []int{0, 1}},
		{SchemaVersion: 1, ID: "b", Dim: 3, SparseInstances: one, Labels: []int{1}, Classes: []string{"a"}},
	}
	for i := range cases {
		if d := checkEncodedDiffer(v, ref, &cases[i]); d != "" {
			t.Errorf("case %d: %s", i, d)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 8000 {
		m := randomSparseBag(rng)
		if d := checkEncodedDiffer(v, ref, &m); d != "" {
			t.Fatalf("%+v: %s", m, d)
		}
	}
}

// randomSparseBag returns a sparse bag message near the valid ones, with
// every kind of fault of a sparse instance: indices out of order,
// repeated, negative or not below dim, a value short or extra, NaN, ±Inf,
// nil arrays, no instances, and now and then dense instances beside them.
func randomSparseBag(rng *rand.Rand) wire.BagMessage {
	pick := func(vs ...int) int { return vs[rng.IntN(len(vs))] }
	m := wire.BagMessage{SchemaVersion: pick(1, 1, 1, 2), ID: []string{"b", "b", "", "\xff"}[rng.IntN(4)], Dim: pick(4, 4, 4, 3, 1, 0)}
	if rng.IntN(20) > 0 {
		m.SparseInstances = []mil.SparseVec{}
		for range rng.IntN(4) {
			var v mil.SparseVec
			if rng.IntN(20) > 0 {
				v.Idx = []int32{}
				// Mostly ascending from a random start; sometimes a step
				// back, a repeat or a negative index.
				j := int32(pick(0, 0, 1, -1))
				for range rng.IntN(4) {
					v.Idx = append(v.Idx, j)
					j += int32(pick(1, 1, 1, 2, 0, -1))
				}
			}
			if rng.IntN(20) > 0 {
				v.Val = []float64{}
				n := len(v.Idx) + pick(0, 0, 0, 0, 0, 0, 1, -1)
				for range max(n, 0) {
					v.Val = append(v.Val, []float64{0.5, -1, 0, math.Copysign(0, -1), math.NaN(), math.Inf(-1)}[pick(0, 1, 2, 3, 0, 1, 2, 4, 5)])
				}
			}
			m.SparseInstances = append(m.SparseInstances, v)
		}
	}
	if rng.IntN(15) == 0 {
		m.Instances = [][]float64{{1, 2, 3, 4}}
	}
	m.Classes = [][]string{nil, {}, {"a"}, {"a", "b"}}[rng.IntN(4)]
	if rng.IntN(2) == 0 {
		m.Labels = []int{}
		for range rng.IntN(3) {
			m.Labels = append(m.Labels, pick(0, 1, 2))
		}
	}
	if rng.IntN(3) == 0 {
		m.InstanceLabels = []int{}
		for range rng.IntN(4) {
			m.InstanceLabels = append(m.InstanceLabels, pick(-1, 0, 1))
		}
	}
	return m
}

// FuzzCheckEncoded: messages decoded leniently (encoding/json into the Go
// type) from fuzzed bytes, checked in memory and by the reference on their
// encoding.
func FuzzCheckEncoded(f *testing.F) {
	for _, s := range bagSeeds(f) {
		f.Add([]byte(s))
	}
	v, _ := wire.NewValidator(0)
	ref := schemaref.MustNew(0)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m wire.BagMessage
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		if d := checkEncodedDiffer(v, ref, &m); d != "" {
			t.Fatal(d)
		}
	})
}

// BenchmarkDecodeDocument measures the decoding of MSCV2 bag messages:
// "decode" is what the services run (before the typed decoder: the fast
// generic parse alone, without the schema; now: the typed decoder, schema
// and invariants included), "decode-reference" the generic parse of the
// JSON Schema validator, and "validate-reference" the whole reference
// validation the typed decoder replaced.
func BenchmarkDecodeDocument(b *testing.B) {
	ds, err := dataset.Load("../../../testdata/mscv2/MSCV2.mat")
	if err != nil {
		b.Fatal(err)
	}
	raws := make([][]byte, len(ds.Bags))
	for i := range ds.Bags {
		raws[i], _ = json.Marshal(wire.NewBagMessage(&ds.Bags[i], "mscv2", ds.Dim, ds.Classes, false))
	}
	v, _ := wire.NewValidator(0)
	b.Run("decode", func(b *testing.B) {
		for i := range b.N {
			if _, err := v.DecodeBag(raws[i%len(raws)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-reference", func(b *testing.B) {
		for i := range b.N {
			if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(raws[i%len(raws)])); err != nil {
				b.Fatal(err)
			}
		}
	})
	ref := schemaref.MustNew(0)
	b.Run("validate-reference", func(b *testing.B) {
		for i := range b.N {
			if _, err := ref.DecodeBag(raws[i%len(raws)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeBagErrorsNameTheFault: a dead letter's error says where the
// fault is (which instance, which feature, which property, which byte), so
// an operator can find it in a message of thousands of numbers. Catches an
// index miscounted or a fault reported under another's text.
func TestDecodeBagErrorsNameTheFault(t *testing.T) {
	v, _ := wire.NewValidator(0)
	cases := []struct{ raw, want string }{
		{bag(`"instances":[[1,2],5]`), "instance 1 is not an array"},
		{bag(`"instances":[[1,2],[3,"x"]]`), "instance 1 feature 1 is a string"},
		{bag(`"instances":[[1,2],[3,null]]`), "instance 1 feature 1 is not a number"},
		{bag(`"instances":[[1,2],[3," NaN"]]`), `instance 1 feature 1 = "NaN"`},
		{bag(`"instances":[[1,2],[1e999,1]]`), "instance 1 feature 0 = 1e999"},
		{bag(`"instances":[[1,2],[]]`), "instance 1 has no feature"},
		{bag(`"instances":[[1,2],[3,4,5]]`), "instance 1: instance has the wrong dimension (got 3, want 2)"},
		{bag(`"id":"` + strings.Repeat("é", 257) + `"`), "id of 257 characters"},
		{bag(`"x":1`), `property "x" is not in the bag schema`},
		{`{"schema_version":1,"id":"b","instances":[[1]]}`, `missing required property "dim"`},
		{bag(`"id":"x"`, `"id":"y"`), `key "id" repeated`},
		{bag(`"dim":2.5`), "dim: 2.5 is not an integer"},
		{bag(`"dim":0`), "dim: 0 is less than 1"},
		{bag(`"schema_version":3`), "schema_version 3, want 1"},
		{bag(`"labels":[0]`, `"classes":[]`), "labels without a class vocabulary"},
		{bag(`"labels":[1]`, `"classes":["a"]`), "label 1: label outside the class vocabulary"},
		{bag(`"labels":[1,0]`, `"classes":["a","b"]`), "labels not strictly ascending"},
		{`{"a":1,`, "unexpected end of JSON input"},
		{`{"a" 1}`, `invalid character '1' at byte 5`},
		{`{"a":"\ud800"}`, `\uD800 without its other half at byte 6`},
		{`{"a":"\x"}`, `invalid character 'x' at byte 7 in string escape code`},
	}
	for _, c := range cases {
		_, err := v.DecodeBag([]byte(c.raw))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80s: error %v, want it to say %q", c.raw, err, c.want)
		}
	}
}
