package featurestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/embedded/redisserver"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
)

var abc = []string{"a", "b", "c"}

func TestPutGet(t *testing.T) { redistest.ForEachBackend(t, testPutGet) }

func testPutGet(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	parent, err := r.Put(ctx, blobOf(t, "orlr", 3, abc, "parent"), VersionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	blob := blobOf(t, "orlr", 3, abc, "child")
	sum := sha256.Sum256(blob)
	checksum := hex.EncodeToString(sum[:])
	tests := []struct {
		name    string
		blob    []byte
		meta    VersionMeta
		wantErr error
	}{
		{name: "empty meta filled from envelope", blob: blob},
		{name: "full consistent meta", blob: blob, meta: VersionMeta{
			Kind: "orlr", Dim: 3, Classes: abc, Checksum: checksum, Size: len(blob),
			TrainingWindow: "bags 0-999", Metrics: map[string]float64{"accuracy": 0.75}, Parent: parent.Version,
		}},
		{name: "caller version is replaced", blob: blob, meta: VersionMeta{Version: "v999"}},
		{name: "kind mismatch", blob: blob, meta: VersionMeta{Kind: "mier"}, wantErr: ErrCorrupt},
		{name: "dim mismatch", blob: blob, meta: VersionMeta{Dim: 4}, wantErr: ErrCorrupt},
		{name: "classes mismatch", blob: blob, meta: VersionMeta{Classes: []string{"a", "c", "b"}}, wantErr: ErrCorrupt},
		{name: "wrong checksum", blob: blob, meta: VersionMeta{Checksum: hex.EncodeToString(make([]byte, 32))}, wantErr: ErrCorrupt},
		{name: "wrong size", blob: blob, meta: VersionMeta{Size: len(blob) + 1}, wantErr: ErrCorrupt},
		{name: "not a model envelope", blob: []byte(`{"hello":1}`), wantErr: ErrCorrupt},
		{name: "empty blob", blob: nil, wantErr: ErrCorrupt},
		{name: "unknown parent", blob: blob, meta: VersionMeta{Parent: "v12345"}, wantErr: ErrNotFound},
	}
	last := parent.Version
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now().UTC().Add(-time.Second)
			got, err := r.Put(ctx, tc.blob, tc.meta)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Put error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n, _ := parseVersion(got.Version)
			m, _ := parseVersion(last)
			if n != m+1 {
				t.Errorf("version %s after %s, want consecutive", got.Version, last)
			}
			last = got.Version
			if got.Kind != "orlr" || got.Dim != 3 || !slices.Equal(got.Classes, abc) {
				t.Errorf("meta %+v not filled from envelope", got)
			}
			if got.Checksum != checksum || got.Size != len(blob) {
				t.Errorf("checksum/size = %s/%d, want %s/%d", got.Checksum, got.Size, checksum, len(blob))
			}
			if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) {
				t.Errorf("created_at %v not now", got.CreatedAt)
			}
			b, stored, err := r.Get(ctx, got.Version)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, tc.blob) {
				t.Error("Get returned a different blob")
			}
			if !metaEqual(stored, got) {
				t.Errorf("Get meta %+v, Put returned %+v", stored, got)
			}
		})
	}
}

func metaEqual(a, b VersionMeta) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestGetUnknown(t *testing.T) { redistest.ForEachBackend(t, testGetUnknown) }

func testGetUnknown(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	if _, err := r.Put(ctx, blobOf(t, "k", 1, abc, ""), VersionMeta{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v2", "v0", "v01", "1", "", "v1x", "v-1", "../v1"} {
		if _, _, err := r.Get(ctx, v); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrNotFound", v, err)
		}
	}
	if _, err := r.Alias(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Alias error = %v, want ErrNotFound", err)
	}
	if _, _, err := r.Current(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Current error = %v, want ErrNotFound", err)
	}
	if err := r.Promote(ctx, "v7"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Promote(unknown) error = %v, want ErrNotFound", err)
	}
}

// TestCorruptionRefused damages stored versions in Redis directly and
// checks that the damage is detected by Get, Current, Promote and Rollback,
// and that nothing is served or changed.
func TestCorruptionRefused(t *testing.T) { redistest.ForEachBackend(t, testCorruptionRefused) }

func testCorruptionRefused(t *testing.T, rdb redis.UniversalClient, prefix string) {
	tests := []struct {
		name   string
		damage func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string)
	}{
		{"flip a blob byte", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			b := must(rdb.GetRange(ctx, r.blobKey(v), 10, 10).Bytes())(t)
			must(rdb.SetRange(ctx, r.blobKey(v), 10, string([]byte{b[0] ^ 0x20})).Result())(t)
		}},
		{"truncate the blob", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			b := must(rdb.Get(ctx, r.blobKey(v)).Bytes())(t)
			must(rdb.Set(ctx, r.blobKey(v), b[:len(b)-1], 0).Result())(t)
		}},
		{"delete the blob", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			must(rdb.Del(ctx, r.blobKey(v)).Result())(t)
		}},
		{"delete the metadata", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			must(rdb.Del(ctx, r.metaKey(v)).Result())(t)
		}},
		{"metadata not JSON", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			must(rdb.Set(ctx, r.metaKey(v), "{", 0).Result())(t)
		}},
		{"metadata of another version", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			editMeta(ctx, t, rdb, r, v, func(m *VersionMeta) { m.Version = "v1" })
		}},
		{"wrong kind, checksum intact", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			editMeta(ctx, t, rdb, r, v, func(m *VersionMeta) { m.Kind = "other" })
		}},
		{"wrong classes, checksum intact", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			editMeta(ctx, t, rdb, r, v, func(m *VersionMeta) { m.Classes = []string{"x"} })
		}},
		{"wrong checksum", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			editMeta(ctx, t, rdb, r, v, func(m *VersionMeta) { m.Checksum = m.Checksum[1:] + "0" })
		}},
		{"blob replaced by another valid model", func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string) {
			must(rdb.Set(ctx, r.blobKey(v), blobOf(t, "k", 2, abc, "evil"), 0).Result())(t)
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			r := NewRegistry(rdb, fmt.Sprintf("%s:%d", prefix, i))
			var vs []string
			for j := range 3 {
				m, err := r.Put(ctx, blobOf(t, "k", 2, abc, fmt.Sprint(j)), VersionMeta{})
				if err != nil {
					t.Fatal(err)
				}
				vs = append(vs, m.Version)
			}
			v1, v2, v3 := vs[0], vs[1], vs[2]
			// v1 current, v2 previous -> promote v2, then corrupt v2
			// and v3: Current and Rollback meet v2, Promote meets v3.
			for _, v := range []string{v1, v2} {
				if err := r.Promote(ctx, v); err != nil {
					t.Fatal(err)
				}
			}
			tc.damage(ctx, t, rdb, r, v2)
			tc.damage(ctx, t, rdb, r, v3)
			for _, v := range []string{v2, v3} {
				if b, _, err := r.Get(ctx, v); !errors.Is(err, ErrCorrupt) || b != nil {
					t.Errorf("Get(%s) = %d bytes, %v; want nil, ErrCorrupt", v, len(b), err)
				}
			}
			if b, _, err := r.Current(ctx); !errors.Is(err, ErrCorrupt) || b != nil {
				t.Errorf("Current = %d bytes, %v; want nil, ErrCorrupt", len(b), err)
			}
			if err := r.Promote(ctx, v3); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Promote(corrupt) error = %v, want ErrCorrupt", err)
			}
			if _, _, err := r.Get(ctx, v1); err != nil {
				t.Errorf("intact %s: %v", v1, err)
			}
			// Current is v2 (corrupt), previous v1 (intact): rollback is
			// allowed and gets the service back to a good model.
			if got, err := r.Rollback(ctx); err != nil || got != v1 {
				t.Fatalf("Rollback = %q, %v; want %s", got, err, v1)
			}
			// Now make v2 previous again by hand and check that a
			// rollback to a corrupt version changes nothing.
			must(rdb.LPush(ctx, r.historyKey(), v2).Result())(t)
			if _, err := r.Rollback(ctx); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Rollback to corrupt error = %v, want ErrCorrupt", err)
			}
			if cur, _ := r.Alias(ctx, AliasCurrent); cur != v1 {
				t.Errorf("current = %s after refused rollback, want %s", cur, v1)
			}
		})
	}
}

func editMeta(ctx context.Context, t *testing.T, rdb redis.UniversalClient, r *Registry, v string, edit func(*VersionMeta)) {
	t.Helper()
	var m VersionMeta
	if err := json.Unmarshal(must(rdb.Get(ctx, r.metaKey(v)).Bytes())(t), &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	must(rdb.Set(ctx, r.metaKey(v), b, 0).Result())(t)
}

// must turns (value, error) into a function failing t on error.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestPutNeverOverwrites(t *testing.T) { redistest.ForEachBackend(t, testPutNeverOverwrites) }

func testPutNeverOverwrites(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	orig := blobOf(t, "k", 2, abc, "original")
	m1, err := r.Put(ctx, orig, VersionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	// A reset counter makes the next Put draw v1 again.
	must(rdb.Set(ctx, r.seqKey(), 0, 0).Result())(t)
	if _, err := r.Put(ctx, blobOf(t, "k", 2, abc, "intruder"), VersionMeta{}); err == nil {
		t.Fatal("Put over an existing version succeeded")
	}
	// A stray metadata key alone also blocks the write.
	must(rdb.Set(ctx, r.metaKey("v2"), "x", 0).Result())(t)
	if _, err := r.Put(ctx, blobOf(t, "k", 2, abc, "intruder"), VersionMeta{}); err == nil {
		t.Fatal("Put over existing metadata succeeded")
	}
	if ex := must(rdb.Exists(ctx, r.blobKey("v2")).Result())(t); ex != 0 {
		t.Error("refused Put left a blob behind")
	}
	b, m, err := r.Get(ctx, m1.Version)
	if err != nil || !bytes.Equal(b, orig) || !metaEqual(m, m1) {
		t.Fatalf("original version changed: %v", err)
	}
	m3, err := r.Put(ctx, blobOf(t, "k", 2, abc, "next"), VersionMeta{})
	if err != nil || m3.Version != "v3" {
		t.Fatalf("Put after the conflicts = %q, %v; want v3", m3.Version, err)
	}
}

// refRegistry is the reference semantics of Promote and Rollback: a
// current version and a stack of former ones.
type refRegistry struct {
	current string
	history []string // most recent first
}

func (f *refRegistry) promote(v string) {
	if f.current == v {
		return
	}
	if f.current != "" {
		f.history = slices.Insert(f.history, 0, f.current)
		if len(f.history) > maxHistory {
			f.history = f.history[:maxHistory]
		}
	}
	f.current = v
}

func (f *refRegistry) rollback() (string, bool) {
	if len(f.history) == 0 {
		return "", false
	}
	f.current, f.history = f.history[0], f.history[1:]
	return f.current, true
}

// TestPromoteRollbackAgainstReference drives random promote/rollback
// sequences and compares every alias with the reference after each step,
// and checks that each change is announced.
func TestPromoteRollbackAgainstReference(t *testing.T) {
	redistest.ForEachBackend(t, testPromoteRollbackAgainstReference)
}

func testPromoteRollbackAgainstReference(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for i := range 5 {
		m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(i)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	notes, err := r.Subscribe(subCtx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var ref refRegistry
	for step := range 150 {
		var want string
		if rng.IntN(3) == 0 {
			got, err := r.Rollback(ctx)
			exp, ok := ref.rollback()
			if !ok {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("step %d: Rollback with no history: %q, %v", step, got, err)
				}
				continue
			}
			if err != nil || got != exp {
				t.Fatalf("step %d: Rollback = %q, %v; want %s", step, got, err, exp)
			}
			want = exp
		} else {
			v := vs[rng.IntN(len(vs))]
			if err := r.Promote(ctx, v); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			ref.promote(v)
			want = v
		}
		select {
		case got := <-notes:
			if got != want {
				t.Fatalf("step %d: notification %q, want %q", step, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("step %d: no notification", step)
		}
		cur, err := r.Alias(ctx, AliasCurrent)
		if err != nil || cur != ref.current {
			t.Fatalf("step %d: current = %q, %v; want %q", step, cur, err, ref.current)
		}
		prev, err := r.Alias(ctx, AliasPrevious)
		if len(ref.history) == 0 {
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("step %d: previous = %q, %v; want ErrNotFound", step, prev, err)
			}
		} else if err != nil || prev != ref.history[0] {
			t.Fatalf("step %d: previous = %q, %v; want %q", step, prev, err, ref.history[0])
		}
		h := must(rdb.LRange(ctx, r.historyKey(), 0, -1).Result())(t)
		if !slices.Equal(h, ref.history) && !(len(h) == 0 && len(ref.history) == 0) {
			t.Fatalf("step %d: history %v, want %v", step, h, ref.history)
		}
		_, meta, err := r.Current(ctx)
		if err != nil || meta.Version != ref.current {
			t.Fatalf("step %d: Current = %s, %v", step, meta.Version, err)
		}
	}
	cancel()
	for range notes { // must close after cancel
	}
}

// TestConcurrentPromote promotes n distinct versions from n goroutines at
// once. With atomic promotion, the final current version plus the history
// is a permutation of all n versions (no update lost or applied twice), and
// every promotion is announced once.
func TestConcurrentPromote(t *testing.T) { redistest.ForEachBackend(t, testConcurrentPromote) }

func testConcurrentPromote(t *testing.T, rdb redis.UniversalClient, prefix string) {
	const n = 16
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for i := range n {
		m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(i)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	notes, err := r.Subscribe(subCtx)
	if err != nil {
		t.Fatal(err)
	}
	// Each goroutine gets its own registry and connection pool, as
	// separate retrainer processes would.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for _, v := range vs {
		wg.Go(func() {
			c := newClientLike(t, rdb)
			defer c.Close()
			<-start
			errs <- NewRegistry(c, prefix).Promote(ctx, v)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cur := must(r.Alias(ctx, AliasCurrent))(t)
	h := must(rdb.LRange(ctx, r.historyKey(), 0, -1).Result())(t)
	if len(h) != n-1 {
		t.Errorf("history has %d entries, want %d: %v", len(h), n-1, h)
	}
	all := append([]string{cur}, h...)
	slices.Sort(all)
	want := slices.Clone(vs)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("current+history = %v, want a permutation of %v", all, want)
	}
	if prev := must(r.Alias(ctx, AliasPrevious))(t); prev != h[0] {
		t.Errorf("previous %s != history head %s", prev, h[0])
	}
	seen := map[string]bool{}
	for range n {
		select {
		case v := <-notes:
			seen[v] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d of %d notifications", len(seen), n)
		}
	}
	if len(seen) != n {
		t.Errorf("notified versions %v, want all %d", seen, n)
	}
}

func TestList(t *testing.T) { redistest.ForEachBackend(t, testList) }

func testList(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	got, err := r.List(ctx)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("List of empty registry = %v, %v; want empty", got, err)
	}
	var want []VersionMeta
	for i := range 12 { // > 9 so lexical order would differ
		m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(i)), VersionMeta{Metrics: map[string]float64{"i": float64(i)}})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	got, err = r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("List has %d versions, want %d", len(got), len(want))
	}
	for i := range want {
		if !metaEqual(got[i], want[i]) {
			t.Errorf("List[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSubscribeClosesOnCancel(t *testing.T) {
	addr, stop, err := redisserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	notes, err := NewRegistry(rdb, "x").Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stop() // Redis goes away under a live subscription
	cancel()
	select {
	case _, ok := <-notes:
		if ok {
			t.Fatal("unexpected notification")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notification channel not closed after cancel")
	}
}

// TestRedisDown checks that every operation against an unreachable Redis
// returns an error (not ErrNotFound, not a panic) within its context.
func TestRedisDown(t *testing.T) {
	addr := closedAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := redisflag.Dial(ctx, redisflag.Options{Addr: addr}); err == nil {
		t.Fatal("Connect to a closed port succeeded")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	r := NewRegistry(rdb, "down")
	blob := blobOf(t, "k", 1, abc, "")
	ops := []struct {
		name string
		op   func(context.Context) error
	}{
		{"Put", func(ctx context.Context) error { _, err := r.Put(ctx, blob, VersionMeta{}); return err }},
		{"Get", func(ctx context.Context) error { _, _, err := r.Get(ctx, "v1"); return err }},
		{"Alias", func(ctx context.Context) error { _, err := r.Alias(ctx, AliasCurrent); return err }},
		{"Current", func(ctx context.Context) error { _, _, err := r.Current(ctx); return err }},
		{"Promote", func(ctx context.Context) error { return r.Promote(ctx, "v1") }},
		{"Rollback", func(ctx context.Context) error { _, err := r.Rollback(ctx); return err }},
		{"Subscribe", func(ctx context.Context) error { _, err := r.Subscribe(ctx); return err }},
		{"List", func(ctx context.Context) error { _, err := r.List(ctx); return err }},
	}
	for _, tc := range ops {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tc.op(ctx) }()
			select {
			case err := <-done:
				if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
					t.Errorf("error = %v, want a connection error", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("operation hangs past its context deadline")
			}
		})
	}
}

func TestPrune(t *testing.T) { redistest.ForEachBackend(t, testPrune) }

func testPrune(t *testing.T, rdb redis.UniversalClient, prefix string) {
	tests := []struct {
		keep     int
		promote  []int // indices of the versions promoted, in order
		rollback bool
		want     []int // indices of the versions kept
	}{
		{keep: 2, promote: []int{2, 4, 6}, want: []int{2, 4, 6, 8, 9}},
		{keep: 0, promote: []int{2, 4, 6}, want: []int{2, 4, 6}},
		{keep: 0, promote: []int{2, 4, 6}, rollback: true, want: []int{2, 4}},
		{keep: 0, want: nil},
		{keep: 20, promote: []int{0}, want: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ctx := testCtx(t)
			r := NewRegistry(rdb, fmt.Sprintf("%s:%d", prefix, i))
			var vs []string
			for j := range 10 {
				m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(j)), VersionMeta{})
				if err != nil {
					t.Fatal(err)
				}
				vs = append(vs, m.Version)
			}
			for _, j := range tc.promote {
				if err := r.Promote(ctx, vs[j]); err != nil {
					t.Fatal(err)
				}
			}
			if tc.rollback {
				if _, err := r.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := r.Prune(ctx, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			var want, wantRemoved []string
			for j, v := range vs {
				if slices.Contains(tc.want, j) {
					want = append(want, v)
				} else {
					wantRemoved = append(wantRemoved, v)
				}
			}
			if !slices.Equal(removed, wantRemoved) && len(removed)+len(wantRemoved) > 0 {
				t.Errorf("removed %v, want %v", removed, wantRemoved)
			}
			list, err := r.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, m := range list {
				kept = append(kept, m.Version)
			}
			if !slices.Equal(kept, want) {
				t.Errorf("kept %v, want %v", kept, want)
			}
			for _, v := range wantRemoved {
				if _, _, err := r.Get(ctx, v); !errors.Is(err, ErrNotFound) {
					t.Errorf("Get(pruned %s) error = %v, want ErrNotFound", v, err)
				}
			}
			for _, v := range want {
				if _, _, err := r.Get(ctx, v); err != nil {
					t.Errorf("Get(kept %s): %v", v, err)
				}
			}
			if again, err := r.Prune(ctx, tc.keep); err != nil || len(again) != 0 {
				t.Errorf("second Prune removed %v, %v; want nothing", again, err)
			}
		})
	}
	t.Run("negative keep", func(t *testing.T) {
		if _, err := NewRegistry(rdb, prefix).Prune(testCtx(t), -1); err == nil {
			t.Error("Prune(-1) succeeded")
		}
	})
}

// TestPruneConcurrentWithPromote prunes everything unprotected while other
// clients promote and roll back: no alias or history entry may ever be
// left pointing at a deleted version.
func TestPruneConcurrentWithPromote(t *testing.T) {
	redistest.ForEachBackend(t, testPruneConcurrentWithPromote)
}

func testPruneConcurrentWithPromote(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	r := NewRegistry(rdb, prefix)
	var vs []string
	for j := range 40 {
		m, err := r.Put(ctx, blobOf(t, "k", 1, abc, fmt.Sprint(j)), VersionMeta{})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, m.Version)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 40 {
			if _, err := r.Prune(ctx, 0); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range 40 {
				var err error
				if rng.IntN(4) == 0 {
					_, err = r.Rollback(ctx)
				} else {
					err = r.Promote(ctx, vs[rng.IntN(len(vs))])
				}
				// Promoting a pruned version is refused, not an error
				// of the test.
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	refs := must(rdb.LRange(ctx, r.historyKey(), 0, -1).Result())(t)
	for _, a := range []string{AliasCurrent, AliasPrevious} {
		if v, err := r.Alias(ctx, a); err == nil {
			refs = append(refs, v)
		}
	}
	for _, v := range refs {
		if _, _, err := r.Get(ctx, v); err != nil {
			t.Errorf("referenced version %s: %v", v, err)
		}
	}
}
