package quality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/featurestore"
)

// Store keeps the live scores in Redis, next to the model registry whose
// versions they score. A version's scores are under its key (KeyOf: its
// ID, never its name). Key layout, with B = "{prefix}:quality" (the
// registry's prefix, so the keys share its Redis Cluster slot) and K a
// version's key:
//
//	B:total:K               hash of a version's sums since it was first scored (expires 30 days after the last)
//	B:bucket:K:T            hash of its sums over the bucket starting at unix second T (expires after Retain)
//	B:buckets:K             sorted set of its bucket starts
//	B:shadow:KC:KK          hash of candidate KC's and current KK's sums over the same bags ("cand:" and "cur:" fields)
//	B:verdicts              the latest shadow verdicts, JSON, newest first
//
// Sums are added with HINCRBY/HINCRBYFLOAT, so any number of annotators
// add to the same keys and the figures are those of all their bags.
type Store struct {
	rdb    redis.UniversalClient
	base   string
	bucket time.Duration
	retain time.Duration
}

// NewStore returns the store of the registry with the given prefix (default
// "mimlstream:models"). Scores go into buckets of width bucket (<= 0: one
// minute) kept for retain (<= 0: 24 h).
func NewStore(rdb redis.UniversalClient, prefix string, bucket, retain time.Duration) *Store {
	if prefix == "" {
		prefix = "mimlstream:models"
	}
	if bucket <= 0 {
		bucket = time.Minute
	}
	if retain <= 0 {
		retain = 24 * time.Hour
	}
	return &Store{rdb: rdb, base: "{" + prefix + "}:quality", bucket: bucket, retain: retain}
}

// KeyOf is the key of a version's scores in the Store: its ID (a ULID,
// unique forever), never its name, which starts again at v1 when the
// registry is reset, so a new v5 would inherit an old v5's scores. A
// version stored before IDs existed has only its name.
func KeyOf(meta featurestore.VersionMeta) string {
	if meta.ID != "" {
		return meta.ID
	}
	return meta.Version
}

// Bucket is the width of the store's time buckets.
func (s *Store) Bucket() time.Duration { return s.bucket }

func (s *Store) totalKey(v string) string { return s.base + ":total:" + v }
func (s *Store) bucketKey(v string, start int64) string {
	return s.base + ":bucket:" + v + ":" + strconv.FormatInt(start, 10)
}
func (s *Store) bucketsKey(v string) string        { return s.base + ":buckets:" + v }
func (s *Store) shadowKey(cand, cur string) string { return s.base + ":shadow:" + cand + ":" + cur }
func (s *Store) verdictsKey() string               { return s.base + ":verdicts" }

// incr queues the additions of r to hash key, field names prefixed.
func incr(ctx context.Context, p redis.Pipeliner, key, prefix string, r Record) {
	p.HIncrBy(ctx, key, prefix+"bags", r.Bags)
	p.HIncrByFloat(ctx, key, prefix+"hamming", r.Hamming)
	p.HIncrBy(ctx, key, prefix+"ranked", r.Ranked)
	p.HIncrByFloat(ctx, key, prefix+"ap", r.AP)
	p.HIncrBy(ctx, key, prefix+"instances", r.Instances)
	p.HIncrBy(ctx, key, prefix+"correct", r.Correct)
	if r.Failed != 0 {
		p.HIncrBy(ctx, key, prefix+"failed", r.Failed)
	}
}

// parse reads the fields written by incr.
func parse(h map[string]string, prefix string) (Record, error) {
	var r Record
	var errs []error
	i := func(name string) int64 {
		s, ok := h[prefix+name]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		errs = append(errs, err)
		return n
	}
	f := func(name string) float64 {
		s, ok := h[prefix+name]
		if !ok {
			return 0
		}
		x, err := strconv.ParseFloat(s, 64)
		errs = append(errs, err)
		return x
	}
	r.Bags, r.Hamming, r.Ranked, r.AP, r.Instances, r.Correct = i("bags"), f("hamming"), i("ranked"), f("ap"), i("instances"), i("correct")
	r.Failed = i("failed")
	if err := errors.Join(errs...); err != nil {
		return Record{}, fmt.Errorf("malformed quality record: %w", err)
	}
	return r, nil
}

// Add adds the scores of version made at time at, to its totals and to the
// bucket holding at, in one MULTI/EXEC.
func (s *Store) Add(ctx context.Context, version string, at time.Time, r Record) error {
	start := at.Truncate(s.bucket).Unix()
	bk := s.bucketKey(version, start)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr(ctx, p, s.totalKey(version), "", r)
		// A version no longer scored (deleted, or long replaced) leaves
		// its totals for a month, then Redis forgets them.
		p.Expire(ctx, s.totalKey(version), max(s.retain, totalRetain))
		incr(ctx, p, bk, "", r)
		p.Expire(ctx, bk, s.retain+s.bucket)
		p.ZAdd(ctx, s.bucketsKey(version), redis.Z{Score: float64(start), Member: start})
		p.ZRemRangeByScore(ctx, s.bucketsKey(version), "-inf", "("+strconv.FormatInt(at.Add(-s.retain).Unix(), 10))
		p.Expire(ctx, s.bucketsKey(version), s.retain+s.bucket)
		return nil
	})
	if err != nil {
		return fmt.Errorf("quality: add %s: %w", version, err)
	}
	return nil
}

// AddShadow adds the scores of candidate and current on the same bags.
func (s *Store) AddShadow(ctx context.Context, candidate, current string, cand, cur Record) error {
	k := s.shadowKey(candidate, current)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr(ctx, p, k, "cand:", cand)
		incr(ctx, p, k, "cur:", cur)
		p.Expire(ctx, k, s.retain)
		return nil
	})
	if err != nil {
		return fmt.Errorf("quality: add shadow %s vs %s: %w", candidate, current, err)
	}
	return nil
}

// Total returns a version's sums since it was first scored.
func (s *Store) Total(ctx context.Context, version string) (Record, error) {
	h, err := s.rdb.HGetAll(ctx, s.totalKey(version)).Result()
	if err != nil {
		return Record{}, fmt.Errorf("quality: total %s: %w", version, err)
	}
	return parse(h, "")
}

// Shadow returns the sums of candidate and current over the bags both
// were scored on.
func (s *Store) Shadow(ctx context.Context, candidate, current string) (cand, cur Record, err error) {
	h, err := s.rdb.HGetAll(ctx, s.shadowKey(candidate, current)).Result()
	if err != nil {
		return Record{}, Record{}, fmt.Errorf("quality: shadow %s vs %s: %w", candidate, current, err)
	}
	if cand, err = parse(h, "cand:"); err != nil {
		return Record{}, Record{}, err
	}
	cur, err = parse(h, "cur:")
	return cand, cur, err
}

// Point is a version's sums over one bucket.
type Point struct {
	Start time.Time `json:"start"`
	Record
}

// Series returns a version's buckets that start at or after since, oldest
// first.
func (s *Store) Series(ctx context.Context, version string, since time.Time) ([]Point, error) {
	starts, err := s.rdb.ZRangeByScore(ctx, s.bucketsKey(version), &redis.ZRangeBy{Min: strconv.FormatInt(since.Truncate(s.bucket).Unix(), 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("quality: series %s: %w", version, err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(starts))
	ns := make([]int64, len(starts))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range starts {
			n, err := strconv.ParseInt(st, 10, 64)
			if err != nil {
				return fmt.Errorf("malformed bucket start %q: %w", st, err)
			}
			ns[i] = n
			cmds[i] = p.HGetAll(ctx, s.bucketKey(version, n))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quality: series %s: %w", version, err)
	}
	out := make([]Point, 0, len(starts))
	for i, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue // expired between the two reads
		}
		r, err := parse(h, "")
		if err != nil {
			return nil, err
		}
		out = append(out, Point{Start: time.Unix(ns[i], 0).UTC(), Record: r})
	}
	return out, nil
}

// Window returns a version's sums over the buckets that overlap the last d
// before now: a rolling window, to within one bucket.
func (s *Store) Window(ctx context.Context, version string, now time.Time, d time.Duration) (Record, error) {
	ps, err := s.Series(ctx, version, now.Add(-d))
	if err != nil {
		return Record{}, err
	}
	var r Record
	for _, p := range ps {
		r.Add(p.Record)
	}
	return r, nil
}

// totalRetain is how long a version's totals outlive its last score.
const totalRetain = 30 * 24 * time.Hour

// maxVerdicts bounds the verdict list.
const maxVerdicts = 100

// AddVerdict records a shadow verdict.
func (s *Store) AddVerdict(ctx context.Context, v Verdict) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, s.verdictsKey(), b)
		p.LTrim(ctx, s.verdictsKey(), 0, maxVerdicts-1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("quality: add verdict: %w", err)
	}
	return nil
}

// Verdicts returns the latest shadow verdicts, newest first.
func (s *Store) Verdicts(ctx context.Context) ([]Verdict, error) {
	raw, err := s.rdb.LRange(ctx, s.verdictsKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("quality: verdicts: %w", err)
	}
	out := make([]Verdict, 0, len(raw))
	for _, r := range raw {
		var v Verdict
		if err := json.Unmarshal([]byte(r), &v); err != nil {
			return nil, fmt.Errorf("quality: malformed verdict: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}
