package featurestore

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/featurecache"
	"github.com/mimlstream/mimlstream/internal/media"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/signing"
)

// Errors returned by the registry; match them with errors.Is.
var (
	// ErrNotFound: the version or alias does not exist.
	ErrNotFound = errors.New("not found")
	// ErrCorrupt: a stored model blob does not match its metadata
	// (checksum, size, or the model envelope's kind, classes and
	// dimension), a blob handed to Put does not match the metadata it came
	// with, or a cached value is malformed. Such data is never served, and
	// a corrupt model version is never promoted.
	ErrCorrupt = errors.New("corrupt or mismatched model blob")
	// ErrUnsigned: a registry with a verify key read a version without a
	// signature. ErrBadSignature: the signature does not verify with the
	// key (the blob was altered after signing, or signed by another key).
	// Both come wrapped together with ErrCorrupt, so every caller that
	// refuses corrupt blobs refuses these too.
	ErrUnsigned     = signing.ErrUnsigned
	ErrBadSignature = signing.ErrBadSignature
)

// Alias names maintained by Promote and Rollback ("current",
// "previous") and by SetCandidate ("candidate": a version annotators run in
// shadow, beside current, to measure its live quality before promotion).
const (
	AliasCurrent   = "current"
	AliasPrevious  = "previous"
	AliasCandidate = "candidate"
)

// Aliases are the registry's alias names.
var Aliases = []string{AliasCurrent, AliasPrevious, AliasCandidate}

// maxHistory bounds the list of formerly current versions kept for
// multi-step rollback.
const maxHistory = 64

// maxTxAttempts bounds the optimistic-transaction retries of Promote,
// Rollback and Prune; conflicts only come from these operations running
// concurrently, so a few retries with jittered backoff suffice in practice.
const maxTxAttempts = 50

// VersionMeta describes one stored model version.
type VersionMeta struct {
	// Version is assigned by Put: "v1", "v2", ... in order of storage. It
	// names the version in the registry (aliases, Promote, Get) and to
	// people, and it starts again at v1 if Redis loses the registry's
	// data; ID does not.
	Version string `json:"version"`
	// ID is assigned by Put and unique forever: a ULID (creation time in
	// milliseconds and 80 random bits), so two models never share it,
	// across registries and registry resets. Versions stored before IDs
	// existed have none.
	ID      string   `json:"id,omitempty"`
	Kind    string   `json:"kind"`
	Classes []string `json:"classes"`
	// ImplicitClasses are the classes at the end of Classes that the model
	// added itself (models.Meta.ImplicitClasses).
	ImplicitClasses []string `json:"implicit_classes,omitempty"`
	Dim             int      `json:"dim"`
	// Featurizer made the instances the model was fitted on (media bags:
	// photos cut into regions, documents into passages); nil when they
	// were vectors from the sender. Annotators refuse bags of another
	// featurizer, and promotion another featurizer than the current
	// version's (Compatible), as they do another dimension.
	Featurizer *media.Featurizer `json:"featurizer,omitempty"`
	// Checksum is the hex SHA-256 of the blob and Size its length in bytes;
	// both are computed by Put and verified by every read.
	Checksum  string    `json:"checksum"`
	Size      int       `json:"size"`
	CreatedAt time.Time `json:"created_at"`
	// TrainingWindow describes the data the model was fitted on (free
	// text, e.g. Kafka offsets or a time range).
	TrainingWindow string             `json:"training_window,omitempty"`
	Metrics        map[string]float64 `json:"metrics,omitempty"`
	// Parent is the version this one was warm-started from, if any.
	Parent string `json:"parent,omitempty"`
	// Signature is the standard base64 of the Ed25519 signature of the
	// blob (signing.Sign), made by Put on a registry with a signing key;
	// empty when the version is unsigned. It covers the blob, and through
	// the blob's envelope the kind, classes and dimension; not the rest of
	// this metadata.
	Signature string `json:"signature,omitempty"`
	// TrainOffsets are, per partition of the training topic, the next
	// offset after the messages the model was fitted on: a restarted
	// retrainer refits only when the topic holds data beyond them.
	TrainOffsets map[int]int64 `json:"train_offsets,omitempty"`
	// Excluded are ids of training bags that refits up to this version
	// isolated (the fit failed on them and succeeded without them) and
	// dead-lettered, the newest few hundred: a restarted retrainer keeps
	// their messages below TrainOffsets out of the window it rebuilds.
	Excluded []string `json:"excluded,omitempty"`
}

// Registry stores serialized models (models.Encode envelopes) as immutable,
// checksummed versions, and keeps the aliases "current" and "previous".
//
// Signing: a registry given a signing key (WithSigningKey) signs every blob
// it stores; a registry given a verify key (WithVerifyKey), or a signing
// key, whose public half then serves as the verify key, refuses on every
// read (Get, Current, and the checks of Promote and Rollback) a version that
// is unsigned or whose signature does not verify. The checksum detects
// corruption; the signature detects tampering by anyone who can write to
// Redis but does not hold the private key.
//
// Key layout, with B = "{prefix}":
//
//	B:seq           INCR counter behind the version numbers
//	B:blob:vN       the model blob (written once, never overwritten)
//	B:meta:vN       its VersionMeta as JSON (written once)
//	B:versions      sorted set of version ids scored by N (for List)
//	B:alias:NAME    version id of an alias
//	B:history       formerly current versions, most recent first; its head
//	                is always the "previous" alias
//	B:events        pub/sub channel carrying each new current version id
type Registry struct {
	rdb    redis.UniversalClient
	base   string
	signer ed25519.PrivateKey // nil: Put stores blobs unsigned
	verify ed25519.PublicKey  // nil: reads do not check signatures
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithSigningKey makes Put sign every blob with key, and reads check
// signatures against its public half unless WithVerifyKey says otherwise:
// a signer (the retrainer) must not warm-start from, or compare against, a
// model it cannot authenticate, or it would sign a tampered model's
// descendant.
func WithSigningKey(key ed25519.PrivateKey) RegistryOption {
	return func(r *Registry) {
		r.signer = key
		if r.verify == nil {
			r.verify = key.Public().(ed25519.PublicKey)
		}
	}
}

// WithVerifyKey makes every read refuse versions that are unsigned or whose
// signature does not verify with key.
func WithVerifyKey(key ed25519.PublicKey) RegistryOption {
	return func(r *Registry) { r.verify = key }
}

// NewRegistry returns a registry whose keys start with "{prefix}" (default
// prefix "mimlstream:models").
func NewRegistry(rdb redis.UniversalClient, prefix string, opts ...RegistryOption) *Registry {
	r := &Registry{rdb: rdb, base: featurecache.KeyBase(prefix, "mimlstream:models")}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Verifies reports whether reads check signatures.
func (r *Registry) Verifies() bool { return r.verify != nil }

func (r *Registry) seqKey() string              { return r.base + ":seq" }
func (r *Registry) blobKey(v string) string     { return r.base + ":blob:" + v }
func (r *Registry) metaKey(v string) string     { return r.base + ":meta:" + v }
func (r *Registry) versionsKey() string         { return r.base + ":versions" }
func (r *Registry) aliasKey(name string) string { return r.base + ":alias:" + name }
func (r *Registry) historyKey() string          { return r.base + ":history" }

// Channel is the pub/sub channel on which Promote and Rollback announce
// the new current version.
func (r *Registry) Channel() string { return r.base + ":events" }

// CandidateChannel is the pub/sub channel on which SetCandidate and
// ClearCandidate announce the candidate alias's new value ("" when
// cleared), so that annotators take a candidate set by hand into shadow at
// once instead of at their next poll.
func (r *Registry) CandidateChannel() string { return r.base + ":candidate-events" }

// putScript writes a version's blob and metadata only if neither exists,
// and indexes it, as one atomic step: a reset counter or a concurrent
// writer can never overwrite a stored version.
var putScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) + redis.call('EXISTS', KEYS[2]) > 0 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'NX')
redis.call('SET', KEYS[2], ARGV[2], 'NX')
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return 1
`)

// Put stores blob as a new immutable version and returns its metadata. It
// assigns Version, ID, Checksum, Size and CreatedAt (values the caller set
// for Checksum or Size must match the blob). The blob must be a model
// envelope (models.Encode); Kind, Classes and Dim are taken from it when
// meta leaves them empty and must agree with it otherwise. A Parent must
// exist. With a signing key, Put signs the blob (replacing any Signature
// given); without one it keeps a given Signature (a blob signed elsewhere).
// A registry that verifies refuses to store what it would refuse to read.
func (r *Registry) Put(ctx context.Context, blob []byte, meta VersionMeta) (VersionMeta, error) {
	sum := sha256.Sum256(blob)
	checksum := hex.EncodeToString(sum[:])
	if meta.Checksum != "" && meta.Checksum != checksum {
		return VersionMeta{}, fmt.Errorf("put: %w: checksum %s given, blob has %s", ErrCorrupt, meta.Checksum, checksum)
	}
	if meta.Size != 0 && meta.Size != len(blob) {
		return VersionMeta{}, fmt.Errorf("put: %w: size %d given, blob has %d bytes", ErrCorrupt, meta.Size, len(blob))
	}
	env, err := models.PeekMeta(blob)
	if err != nil {
		return VersionMeta{}, fmt.Errorf("put: %w: %w", ErrCorrupt, err)
	}
	if meta.Kind == "" {
		meta.Kind = env.Kind
	}
	if meta.Dim == 0 {
		meta.Dim = env.Dim
	}
	if meta.Classes == nil {
		meta.Classes = env.Classes
	}
	if meta.ImplicitClasses == nil {
		meta.ImplicitClasses = env.ImplicitClasses
	}
	if err := matchEnvelope(meta, env); err != nil {
		return VersionMeta{}, fmt.Errorf("put: %w", err)
	}
	if r.signer != nil {
		meta.Signature = base64.StdEncoding.EncodeToString(signing.Sign(r.signer, blob))
	}
	if err := r.checkSignature(blob, meta); err != nil {
		return VersionMeta{}, fmt.Errorf("put: %w", err)
	}
	id, err := newULID(time.Now())
	if err != nil {
		return VersionMeta{}, fmt.Errorf("put: %w", err)
	}
	if meta.Parent != "" {
		n, err := r.rdb.Exists(ctx, r.metaKey(meta.Parent)).Result()
		if err != nil {
			return VersionMeta{}, fmt.Errorf("put: check parent %s: %w", meta.Parent, err)
		}
		if n == 0 {
			return VersionMeta{}, fmt.Errorf("put: parent %s: %w", meta.Parent, ErrNotFound)
		}
	}

	n, err := r.rdb.Incr(ctx, r.seqKey()).Result()
	if err != nil {
		return VersionMeta{}, fmt.Errorf("put: next version number: %w", err)
	}
	meta.Version = "v" + strconv.FormatInt(n, 10)
	meta.ID = id
	meta.Checksum = checksum
	meta.Size = len(blob)
	meta.CreatedAt = time.Now().UTC()
	mj, err := json.Marshal(meta)
	if err != nil {
		return VersionMeta{}, fmt.Errorf("put %s: encode metadata: %w", meta.Version, err)
	}
	ok, err := putScript.Run(ctx, r.rdb,
		[]string{r.blobKey(meta.Version), r.metaKey(meta.Version), r.versionsKey()},
		blob, mj, n, meta.Version).Int()
	if err != nil {
		return VersionMeta{}, fmt.Errorf("put %s: %w", meta.Version, err)
	}
	if ok == 0 {
		return VersionMeta{}, fmt.Errorf("put %s: version already stored (was %s reset?); refusing to overwrite", meta.Version, r.seqKey())
	}
	return meta, nil
}

// matchEnvelope checks that the registry metadata agrees with the metadata
// inside the model envelope.
func matchEnvelope(meta VersionMeta, env models.Meta) error {
	switch {
	case meta.Kind != env.Kind:
		return fmt.Errorf("%w: kind %q, envelope says %q", ErrCorrupt, meta.Kind, env.Kind)
	case meta.Dim != env.Dim:
		return fmt.Errorf("%w: dim %d, envelope says %d", ErrCorrupt, meta.Dim, env.Dim)
	case !slices.Equal(meta.Classes, env.Classes):
		return fmt.Errorf("%w: classes %q, envelope says %q", ErrCorrupt, meta.Classes, env.Classes)
	case !slices.Equal(meta.ImplicitClasses, env.ImplicitClasses):
		return fmt.Errorf("%w: implicit classes %q, envelope says %q", ErrCorrupt, meta.ImplicitClasses, env.ImplicitClasses)
	}
	return nil
}

// ErrMalformedVersion is matched by the error of a version id that is not
// v<N>: an operator's mistake (a usage error to a command), not a version
// that went missing. The error matches ErrNotFound too: no such version
// can exist.
var ErrMalformedVersion = errors.New("malformed version")

type malformedVersion string

func (v malformedVersion) Error() string {
	return fmt.Sprintf("malformed version %q (want v<N>, such as v1, or an alias: %s)", string(v), strings.Join(Aliases, ", "))
}

func (malformedVersion) Is(target error) bool {
	return target == ErrMalformedVersion || target == ErrNotFound
}

// parseVersion returns N for "vN" (N >= 1).
func parseVersion(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(v, "v"), 10, 64)
	if !strings.HasPrefix(v, "v") || err != nil || n < 1 || "v"+strconv.FormatInt(n, 10) != v {
		return 0, malformedVersion(v)
	}
	return n, nil
}

// Get returns a version's blob and metadata after checking that they agree
// (checksum, size, envelope kind, classes and dimension). A mismatch yields
// ErrCorrupt and no blob.
func (r *Registry) Get(ctx context.Context, version string) ([]byte, VersionMeta, error) {
	if _, err := parseVersion(version); err != nil {
		return nil, VersionMeta{}, fmt.Errorf("get: %w", err)
	}
	vals, err := r.rdb.MGet(ctx, r.blobKey(version), r.metaKey(version)).Result()
	if err != nil {
		return nil, VersionMeta{}, fmt.Errorf("get %s: %w", version, err)
	}
	blobS, hasBlob := vals[0].(string)
	metaS, hasMeta := vals[1].(string)
	switch {
	case !hasBlob && !hasMeta:
		return nil, VersionMeta{}, fmt.Errorf("get %s: %w", version, ErrNotFound)
	case !hasBlob:
		return nil, VersionMeta{}, fmt.Errorf("get %s: %w: blob missing", version, ErrCorrupt)
	case !hasMeta:
		return nil, VersionMeta{}, fmt.Errorf("get %s: %w: metadata missing", version, ErrCorrupt)
	}
	var meta VersionMeta
	if err := json.Unmarshal([]byte(metaS), &meta); err != nil {
		return nil, VersionMeta{}, fmt.Errorf("get %s: %w: metadata: %w", version, ErrCorrupt, err)
	}
	blob := []byte(blobS)
	if err := verify(version, blob, meta); err != nil {
		return nil, VersionMeta{}, fmt.Errorf("get %s: %w", version, err)
	}
	if err := r.checkSignature(blob, meta); err != nil {
		return nil, VersionMeta{}, fmt.Errorf("get %s: %w", version, err)
	}
	return blob, meta, nil
}

// Meta returns a version's metadata without reading or verifying its blob
// (Get does both): for what names a version, such as its ID.
func (r *Registry) Meta(ctx context.Context, version string) (VersionMeta, error) {
	if _, err := parseVersion(version); err != nil {
		return VersionMeta{}, fmt.Errorf("meta: %w", err)
	}
	s, err := r.rdb.Get(ctx, r.metaKey(version)).Result()
	if errors.Is(err, redis.Nil) {
		return VersionMeta{}, fmt.Errorf("meta %s: %w", version, ErrNotFound)
	}
	if err != nil {
		return VersionMeta{}, fmt.Errorf("meta %s: %w", version, err)
	}
	var meta VersionMeta
	if err := json.Unmarshal([]byte(s), &meta); err != nil {
		return VersionMeta{}, fmt.Errorf("meta %s: %w: %w", version, ErrCorrupt, err)
	}
	if meta.Version != version {
		return VersionMeta{}, fmt.Errorf("meta %s: %w: metadata is for version %q", version, ErrCorrupt, meta.Version)
	}
	return meta, nil
}

// checkSignature verifies meta's signature of blob when the registry has a
// verify key. The error wraps ErrCorrupt and ErrUnsigned or
// ErrBadSignature.
func (r *Registry) checkSignature(blob []byte, meta VersionMeta) error {
	if r.verify == nil {
		return nil
	}
	var sig []byte
	if meta.Signature != "" {
		var err error
		if sig, err = base64.StdEncoding.DecodeString(meta.Signature); err != nil {
			return fmt.Errorf("%w: %w (signature is not base64)", ErrCorrupt, ErrBadSignature)
		}
	}
	if err := signing.Verify(r.verify, blob, sig); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

func verify(version string, blob []byte, meta VersionMeta) error {
	if meta.Version != version {
		return fmt.Errorf("%w: metadata is for version %q", ErrCorrupt, meta.Version)
	}
	if len(blob) != meta.Size {
		return fmt.Errorf("%w: blob has %d bytes, metadata says %d", ErrCorrupt, len(blob), meta.Size)
	}
	sum := sha256.Sum256(blob)
	if got := hex.EncodeToString(sum[:]); got != meta.Checksum {
		return fmt.Errorf("%w: blob checksum %s, metadata says %s", ErrCorrupt, got, meta.Checksum)
	}
	env, err := models.PeekMeta(blob)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return matchEnvelope(meta, env)
}

// Alias returns the version an alias points to, or ErrNotFound.
func (r *Registry) Alias(ctx context.Context, alias string) (string, error) {
	v, err := r.rdb.Get(ctx, r.aliasKey(alias)).Result()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("alias %q: %w", alias, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("alias %q: %w", alias, err)
	}
	return v, nil
}

// Current returns the blob and metadata of the "current" version.
func (r *Registry) Current(ctx context.Context) ([]byte, VersionMeta, error) {
	v, err := r.Alias(ctx, AliasCurrent)
	if err != nil {
		return nil, VersionMeta{}, err
	}
	return r.Get(ctx, v)
}

// ErrCurrentChanged: a promotion conditioned by IfCurrent found another
// version current (an operator or another retrainer promoted or rolled
// back meanwhile). Nothing changed.
var ErrCurrentChanged = errors.New("current version changed")

// PromoteOption conditions or relaxes a promotion.
type PromoteOption func(*promoteOptions)

type promoteOptions struct {
	ifCurrent *string
	force     bool
}

// IfCurrent makes a promotion a compare-and-set: it happens only if version
// is current when it commits ("" means nothing is current), and fails with
// ErrCurrentChanged otherwise. A candidate compared with current version X
// is promoted with IfCurrent(X), so a rollback or promotion made while it
// was fitted or judged is never undone by it.
func IfCurrent(version string) PromoteOption {
	return func(o *promoteOptions) { o.ifCurrent = &version }
}

// Force promotes past the contract guard: a version of another input
// dimension or class list than current (ErrIncompatible). It never passes a
// version that fails verification (checksum, envelope, signature).
func Force() PromoteOption {
	return func(o *promoteOptions) { o.force = true }
}

// Promote makes version current; the formerly current version becomes
// "previous" (and is kept in a bounded history for further rollbacks).
//
// It is the one way a version becomes current, whoever asks (an operator,
// `retrainer fit --promote`, a refit, a judged candidate), so it enforces
// what every promotion must respect: the version verifies (checksum,
// envelope, and the signature when the registry has a verify key), it has
// current's input dimension and classes (Compatible; ErrIncompatible
// otherwise, unless Force), and, with IfCurrent, current is still the
// version the caller compared it with (ErrCurrentChanged otherwise).
//
// The checks and the alias update are one MULTI/EXEC under WATCH, retried
// on conflict, so concurrent promotions serialize: none is lost, every
// former current version lands in the history exactly once, and no check
// is made against a current that changes before the update. The version's
// own keys are watched too, so a concurrent Prune cannot leave "current"
// pointing at a deleted version. Promoting the current version again
// changes nothing but still notifies.
func (r *Registry) Promote(ctx context.Context, version string, opts ...PromoteOption) error {
	return r.promote(ctx, version, false, opts)
}

// ErrNotCandidate: PromoteCandidate or ClearCandidate found another
// version (or none) aliased "candidate".
var ErrNotCandidate = errors.New("not the candidate")

// PromoteCandidate promotes version as Promote does, but only while it is
// still the "candidate" alias: when several judges (annotators, the
// retrainer) reach the same verdict, one promotion happens and the others
// get ErrNotCandidate. The candidate alias is cleared (it is kept when the
// promotion is refused).
func (r *Registry) PromoteCandidate(ctx context.Context, version string, opts ...PromoteOption) error {
	return r.promote(ctx, version, true, opts)
}

func (r *Registry) promote(ctx context.Context, version string, mustBeCandidate bool, opts []PromoteOption) error {
	var o promoteOptions
	for _, f := range opts {
		f(&o)
	}
	if _, err := parseVersion(version); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	cur, hist, candKey := r.aliasKey(AliasCurrent), r.historyKey(), r.aliasKey(AliasCandidate)
	err := r.retryTx(ctx, func(tx *redis.Tx) error {
		// Verified after WATCH: from here until EXEC, a deletion of the
		// version aborts the transaction.
		_, meta, err := r.Get(ctx, version)
		if err != nil {
			return err
		}
		old, err := tx.Get(ctx, cur).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if o.ifCurrent != nil && old != *o.ifCurrent {
			return fmt.Errorf("%w: current is %s, not %s", ErrCurrentChanged, orNone(old), orNone(*o.ifCurrent))
		}
		cand, err := tx.Get(ctx, candKey).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if mustBeCandidate && cand != version {
			return fmt.Errorf("%w: candidate is %q", ErrNotCandidate, cand)
		}
		if old != "" && old != version && !o.force {
			if err := r.compatibleWith(ctx, tx, old, meta); err != nil {
				return err
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if cand == version {
				// A promoted candidate is no longer in shadow.
				p.Del(ctx, candKey)
			}
			if old != version {
				if old != "" {
					p.LPush(ctx, hist, old)
					p.LTrim(ctx, hist, 0, maxHistory-1)
					p.Set(ctx, r.aliasKey(AliasPrevious), old, 0)
				}
				p.Set(ctx, cur, version, 0)
			}
			p.Publish(ctx, r.Channel(), version)
			return nil
		})
		return err
	}, cur, hist, candKey, r.blobKey(version), r.metaKey(version))
	if err != nil {
		return fmt.Errorf("promote %s: %w", version, err)
	}
	return nil
}

// compatibleWith applies the contract guard: next must take the input of
// version cur (Compatible). Only cur's metadata is read: a current whose
// blob has gone bad still says what the annotators were fed. A current
// whose metadata is gone or unreadable has no contract to hold next to, so
// it does not block its replacement.
func (r *Registry) compatibleWith(ctx context.Context, c redis.Cmdable, cur string, next VersionMeta) error {
	s, err := c.Get(ctx, r.metaKey(cur)).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	var curMeta VersionMeta
	if json.Unmarshal([]byte(s), &curMeta) != nil {
		return nil
	}
	if err := Compatible(curMeta, next); err != nil {
		return fmt.Errorf("%w (annotators fed %s's stream would dead-letter every bag; force the promotion to replace it anyway)", err, cur)
	}
	return nil
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// SetCandidate makes version the "candidate": annotators run it in shadow
// beside current (their annotations still come from current) and score its
// live quality, so that it is promoted on evidence from live traffic. It
// replaces any earlier candidate. The version must verify (a candidate that
// no annotator could load would never be judged), and may not be current.
func (r *Registry) SetCandidate(ctx context.Context, version string) error {
	_, meta, err := r.Get(ctx, version)
	if err != nil {
		return fmt.Errorf("set candidate: %w", err)
	}
	candKey := r.aliasKey(AliasCandidate)
	err = r.retryTx(ctx, func(tx *redis.Tx) error {
		cur, err := tx.Get(ctx, r.aliasKey(AliasCurrent)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if cur == version {
			return fmt.Errorf("%s is already current", version)
		}
		// Annotators score a candidate only on the bags current serves, so
		// one of another dimension or vocabulary would never be judged.
		if cur != "" {
			if err := r.compatibleWith(ctx, tx, cur, meta); err != nil {
				return err
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, candKey, version, 0)
			return nil
		})
		return err
	}, r.aliasKey(AliasCurrent), candKey, r.blobKey(version), r.metaKey(version))
	if err != nil {
		return fmt.Errorf("set candidate %s: %w", version, err)
	}
	// At most once, like every notification: the followers also poll.
	r.rdb.Publish(ctx, r.CandidateChannel(), version)
	return nil
}

// clearIfScript deletes KEYS[1] only if it holds ARGV[1].
var clearIfScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// ClearCandidate removes the "candidate" alias if it still names version
// (a rejected candidate stays stored, for inspection); ErrNotCandidate
// otherwise, so a verdict on an old candidate never clears a newer one.
func (r *Registry) ClearCandidate(ctx context.Context, version string) error {
	n, err := clearIfScript.Run(ctx, r.rdb, []string{r.aliasKey(AliasCandidate)}, version).Int()
	if err != nil {
		return fmt.Errorf("clear candidate %s: %w", version, err)
	}
	if n == 0 {
		return fmt.Errorf("clear candidate %s: %w", version, ErrNotCandidate)
	}
	r.rdb.Publish(ctx, r.CandidateChannel(), "")
	return nil
}

// ErrInUse: Delete refused a version that an alias or the rollback
// history refers to.
var ErrInUse = errors.New("version in use")

// Delete removes a stored version (blob, metadata, index entry). The
// current version is never deleted: annotators serve it, so another version
// must be promoted (or rolled back to) first. A version that is "previous",
// "candidate" or in the rollback history is refused with ErrInUse unless
// force is set; forced, it also leaves those: the candidate alias is
// cleared, the version is removed from the history, and "previous" moves to
// the history's new head (or goes when the history is empty). Runs under
// WATCH of the aliases and the history, like Prune.
func (r *Registry) Delete(ctx context.Context, version string, force bool) error {
	_, err := r.DeleteHeld(ctx, version, force)
	return err
}

// DeleteHeld is Delete, and returns the aliases the version held when it
// was deleted (previous, candidate; never current), read in the
// transaction that deleted it: a caller that read them before could print
// an alias that had moved meanwhile.
func (r *Registry) DeleteHeld(ctx context.Context, version string, force bool) ([]string, error) {
	if _, err := parseVersion(version); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	cur, prev, cand, hist := r.aliasKey(AliasCurrent), r.aliasKey(AliasPrevious), r.aliasKey(AliasCandidate), r.historyKey()
	var held []string
	err := r.retryTx(ctx, func(tx *redis.Tx) error {
		held = nil
		n, err := tx.Exists(ctx, r.metaKey(version), r.blobKey(version)).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound // the caller's error names the version
		}
		al, err := tx.MGet(ctx, cur, prev, cand).Result()
		if err != nil {
			return err
		}
		h, err := tx.LRange(ctx, hist, 0, -1).Result()
		if err != nil {
			return err
		}
		if s, _ := al[0].(string); s == version {
			return fmt.Errorf("%w: it is current; promote or roll back to another version first", ErrInUse)
		}
		var uses []string
		if s, _ := al[1].(string); s == version {
			uses = append(uses, AliasPrevious)
		}
		if s, _ := al[2].(string); s == version {
			uses = append(uses, AliasCandidate)
		}
		inHist := slices.Contains(h, version)
		if inHist && !slices.Contains(uses, AliasPrevious) {
			uses = append(uses, "rollback history")
		}
		if len(uses) > 0 && !force {
			return fmt.Errorf("%w: it is %s", ErrInUse, strings.Join(uses, " and "))
		}
		for _, u := range uses {
			if slices.Contains(Aliases, u) {
				held = append(held, u)
			}
		}
		rest := slices.DeleteFunc(slices.Clone(h), func(v string) bool { return v == version })
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, r.blobKey(version), r.metaKey(version))
			p.ZRem(ctx, r.versionsKey(), version)
			if s, _ := al[2].(string); s == version {
				p.Del(ctx, cand)
			}
			if inHist {
				p.LRem(ctx, hist, 0, version)
				if len(rest) > 0 {
					p.Set(ctx, prev, rest[0], 0)
				} else {
					p.Del(ctx, prev)
				}
			}
			return nil
		})
		return err
	}, cur, prev, cand, hist, r.metaKey(version), r.blobKey(version))
	if err != nil {
		return nil, fmt.Errorf("delete %s: %w", version, err)
	}
	return held, nil
}

// Rollback makes the "previous" version current again and returns it; the
// version rolled back from is dropped, and the next older version becomes
// "previous", so repeated rollbacks walk back through the history. It
// returns ErrNotFound when there is no previous version and ErrCorrupt
// (changing nothing) when the previous blob fails verification.
func (r *Registry) Rollback(ctx context.Context) (string, error) {
	cur, hist := r.aliasKey(AliasCurrent), r.historyKey()
	var target string
	err := r.retryTx(ctx, func(tx *redis.Tx) error {
		h, err := tx.LRange(ctx, hist, 0, 1).Result()
		if err != nil {
			return err
		}
		if len(h) == 0 {
			return fmt.Errorf("no previous version: %w", ErrNotFound)
		}
		target = h[0]
		if _, _, err := r.Get(ctx, target); err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, cur, target, 0)
			p.LPop(ctx, hist)
			if len(h) > 1 {
				p.Set(ctx, r.aliasKey(AliasPrevious), h[1], 0)
			} else {
				p.Del(ctx, r.aliasKey(AliasPrevious))
			}
			p.Publish(ctx, r.Channel(), target)
			return nil
		})
		return err
	}, cur, hist)
	if err != nil {
		return "", fmt.Errorf("rollback: %w", err)
	}
	return target, nil
}

// retryTx runs fn under WATCH keys, retrying with jittered exponential
// backoff while the transaction fails because a watched key changed.
func (r *Registry) retryTx(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error {
	backoff := time.Millisecond
	for range maxTxAttempts {
		err := r.rdb.Watch(ctx, fn, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		// Jitter desynchronizes the contenders; it needs no seed because
		// it affects only timing, never the outcome.
		d := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
	return fmt.Errorf("gave up after %d conflicting concurrent updates", maxTxAttempts)
}

// History returns the formerly current versions, most recent first (the
// head is "previous"): where an annotator that cannot serve current looks
// for the newest version it can.
func (r *Registry) History(ctx context.Context) ([]string, error) {
	h, err := r.rdb.LRange(ctx, r.historyKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return h, nil
}

// Subscribe returns the ids of versions made current by Promote or Rollback
// (from any process) after the subscription is established, which is
// before Subscribe returns. The channel closes when ctx is done or the
// subscription ends. Pub/sub delivery is at most once (a subscriber that is
// disconnected misses messages), so a consumer should also reconcile with
// Current from time to time and on start.
func (r *Registry) Subscribe(ctx context.Context) (<-chan string, error) {
	return r.subscribe(ctx, r.Channel())
}

// SubscribeCandidate returns the candidate alias's values as SetCandidate
// and ClearCandidate announce them ("" when cleared), with Subscribe's
// at-most-once delivery.
func (r *Registry) SubscribeCandidate(ctx context.Context) (<-chan string, error) {
	return r.subscribe(ctx, r.CandidateChannel())
}

func (r *Registry) subscribe(ctx context.Context, channel string) (<-chan string, error) {
	ps := r.rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("subscribe %s: %w", channel, err)
	}
	msgs := ps.Channel()
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- m.Payload:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// List returns the metadata of every stored version, oldest first. It does
// not read the blobs; Get verifies them.
func (r *Registry) List(ctx context.Context) ([]VersionMeta, error) {
	ids, err := r.rdb.ZRange(ctx, r.versionsKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if len(ids) == 0 {
		return []VersionMeta{}, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = r.metaKey(id)
	}
	vals, err := r.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	out := make([]VersionMeta, len(ids))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("list %s: %w: metadata missing", ids[i], ErrCorrupt)
		}
		if err := json.Unmarshal([]byte(s), &out[i]); err != nil {
			return nil, fmt.Errorf("list %s: %w: metadata: %w", ids[i], ErrCorrupt, err)
		}
		if out[i].Version != ids[i] {
			return nil, fmt.Errorf("list %s: %w: metadata is for version %q", ids[i], ErrCorrupt, out[i].Version)
		}
	}
	return out, nil
}

// Prune deletes stored versions to bound the registry's memory, and
// returns the ids deleted, oldest first. It keeps the newest keep versions
// and every version an alias or the rollback history refers to. It runs
// under WATCH of the aliases and the history, so a concurrent Promote or
// Rollback either happens before (and its versions are kept) or makes
// Prune retry. Metadata of kept versions may name a pruned Parent.
func (r *Registry) Prune(ctx context.Context, keep int) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("prune: keep %d < 0", keep)
	}
	cur, prev, cand, hist := r.aliasKey(AliasCurrent), r.aliasKey(AliasPrevious), r.aliasKey(AliasCandidate), r.historyKey()
	var victims []string
	err := r.retryTx(ctx, func(tx *redis.Tx) error {
		victims = victims[:0]
		ids, err := tx.ZRange(ctx, r.versionsKey(), 0, -1).Result()
		if err != nil {
			return err
		}
		h, err := tx.LRange(ctx, hist, 0, -1).Result()
		if err != nil {
			return err
		}
		aliases, err := tx.MGet(ctx, cur, prev, cand).Result()
		if err != nil {
			return err
		}
		protected := map[string]bool{}
		for _, v := range h {
			protected[v] = true
		}
		for _, a := range aliases {
			if s, ok := a.(string); ok {
				protected[s] = true
			}
		}
		for i, v := range ids {
			if i < len(ids)-keep && !protected[v] {
				victims = append(victims, v)
			}
		}
		if len(victims) == 0 {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, v := range victims {
				p.Del(ctx, r.blobKey(v), r.metaKey(v))
				p.ZRem(ctx, r.versionsKey(), v)
			}
			return nil
		})
		return err
	}, cur, prev, cand, hist)
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	return victims, nil
}
