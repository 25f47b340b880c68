package mimlctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
)

// Registry is what the models actions use of the model registry.
type Registry interface {
	Put(ctx context.Context, blob []byte, meta featurestore.VersionMeta) (featurestore.VersionMeta, error)
	Get(ctx context.Context, version string) ([]byte, featurestore.VersionMeta, error)
	Alias(ctx context.Context, alias string) (string, error)
	Promote(ctx context.Context, version string, opts ...featurestore.PromoteOption) error
	Verifies() bool
	Rollback(ctx context.Context) (string, error)
	List(ctx context.Context) ([]featurestore.VersionMeta, error)
	DeleteHeld(ctx context.Context, version string, force bool) ([]string, error)
	SetCandidate(ctx context.Context, version string) error
}

var _ Registry = (*featurestore.Registry)(nil)

// aliases are the registry's alias names, shown next to the versions.
var aliases = featurestore.Aliases

// modelAction is one action of `mimlctl models`.
type modelAction struct {
	name, args, summary string
	// flags registers the action's own flags; run does the work.
	flags func(fs *flag.FlagSet, o *modelOpts)
	run   func(ctx context.Context, m *modelsEnv, pos []string) error
	nargs int
}

// modelOpts holds every action's flags; each action registers its own.
type modelOpts struct {
	json  bool
	force bool
	out   string
	// verifyKey is the PEM file of the Ed25519 public key versions must
	// be signed with, as the annotators' --verify-key.
	verifyKey string
}

type modelsEnv struct {
	env   service.Env
	kinds *models.Registry
	reg   Registry
	opts  modelOpts
	// where names the registry (address and prefix), for an answer that
	// could come from looking in the wrong place.
	where string
}

func modelActions() []modelAction {
	return []modelAction{
		{name: "list", summary: "list the stored versions, oldest first, with their aliases", run: listModels},
		{name: "show", args: "VERSION|ALIAS", summary: "show a version's metadata after verifying its blob (checksum, decoding)", nargs: 1, run: showModel},
		{name: "promote", args: "VERSION", nargs: 1, run: promoteModel,
			summary: "make a version current; refused when its input dimension or classes differ from current's, unless --force",
			flags: func(fs *flag.FlagSet, o *modelOpts) {
				fs.BoolVar(&o.force, "force", false, "promote even if the version's input dimension or classes differ from current's")
			}},
		{name: "candidate", args: "VERSION", nargs: 1, run: candidateModel,
			summary: "run a version in shadow as the candidate: annotators score it beside current and promote it on live quality (their --shadow-min-bags, --shadow-margin)"},
		{name: "rollback", summary: "make the previous version current again (repeat to walk back the history)", run: rollbackModel},
		{name: "delete", args: "VERSION", nargs: 1, run: deleteModel,
			summary: "delete a stored version; never current, and previous, candidate or a version in the rollback history only with --force",
			flags: func(fs *flag.FlagSet, o *modelOpts) {
				fs.BoolVar(&o.force, "force", false, "delete even a version that is previous, candidate or in the rollback history (previous then moves down the history)")
			}},
		{name: "export", args: "VERSION|ALIAS", nargs: 1, run: exportModel,
			summary: "write a version (blob, checksum and metadata) to a file for import elsewhere",
			flags: func(fs *flag.FlagSet, o *modelOpts) {
				fs.StringVar(&o.out, "out", "", "output `file` (default: standard output)")
			}},
		{name: "import", args: "FILE", nargs: 1, run: importModel,
			summary: "store an exported version (or a bare model envelope) as a new version, after verifying it"},
	}
}

func modelsSynopsis() string {
	var b strings.Builder
	b.WriteString("Usage: mimlctl models ACTION [ARGS] [flags]\n\nActions:\n")
	for _, a := range modelActions() {
		fmt.Fprintf(&b, "  %-9s %-15s %s\n", a.name, a.args, a.summary)
	}
	b.WriteString("\nRun 'mimlctl models ACTION --help' for the flags of an action; these are\nthe flags every action takes.")
	return b.String()
}

// ModelsCommand is `mimlctl models ACTION ...`. kinds decodes the models
// (catalog.New() in the command), so a blob that would not load in an
// annotator is refused before it is promoted or imported.
func ModelsCommand(ctx context.Context, env service.Env, kinds *models.Registry, args []string) error {
	var act *modelAction
	if len(args) > 0 {
		for _, a := range modelActions() {
			if a.name == args[0] {
				act = &a
				break
			}
		}
	}
	if act == nil {
		// No action, or --help: the actions, and the flags they share.
		fs := cli.NewFlagSet("mimlctl-models", modelsSynopsis(), env.Stderr)
		var rc redisflag.Config
		var o modelOpts
		registerCommon(fs, &rc, &o)
		if err := cli.ParseArgs(fs, args); err != nil {
			return cli.Usage(err)
		}
		if len(args) == 0 {
			fs.Usage()
			return cli.Usagef("models: an action is required (%s)", strings.Join(actionNames(), ", "))
		}
		return cli.Usagef("models: unknown action %q (want %s)", args[0], strings.Join(actionNames(), ", "))
	}
	argText := ""
	if act.args != "" {
		argText = act.args + " "
	}
	synopsis := fmt.Sprintf("Usage: mimlctl models %s %s[flags]\n\n%s.", act.name, argText, strings.ToUpper(act.summary[:1])+act.summary[1:])
	// The flags every action shares have one variable for them all
	// (MIMLSTREAM_MIMLCTL_MODELS_REDIS, _VERIFY_KEY: set once, they reach
	// every action); an action's own flags have their own, named after it
	// (MIMLSTREAM_MIMLCTL_MODELS_PROMOTE_FORCE), so a variable set for one
	// action never changes what another does.
	var common flag.FlagSet
	var rc redisflag.Config
	m := &modelsEnv{env: env, kinds: kinds}
	registerCommon(&common, &rc, &m.opts)
	envNames := func(f string) string {
		if common.Lookup(f) != nil {
			return cli.EnvName("mimlctl-models", f)
		}
		return cli.EnvName("mimlctl-models-"+act.name, f)
	}
	fs := cli.NewFlagSetEnv("mimlctl-models", synopsis, env.Stderr, envNames)
	registerCommon(fs, &rc, &m.opts)
	if act.flags != nil {
		act.flags(fs, &m.opts)
	}
	pos, err := parseArgs(fs, args[1:], envNames)
	if err != nil {
		return err
	}
	if len(pos) != act.nargs {
		if act.nargs == 0 {
			return cli.Usagef("models %s takes no arguments, got %s", act.name, argsText(pos))
		}
		return cli.Usagef("models %s needs %s, got %s", act.name, act.args, argsText(pos))
	}
	o, err := rc.Options()
	if err != nil {
		return err
	}
	var regOpts []featurestore.RegistryOption
	if m.opts.verifyKey != "" {
		key, err := signing.LoadPublicKey(m.opts.verifyKey)
		if err != nil {
			return cli.Usagef("--verify-key: %w", err)
		}
		regOpts = append(regOpts, featurestore.WithVerifyKey(key))
	}
	// go-redis would print its own dial failures on stderr before the
	// command's error, which says the same with the address: kept quiet
	// below ERROR.
	redisflag.RouteLogs(slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	rdb, err := redisflag.Dial(ctx, o)
	if err != nil {
		return err
	}
	defer rdb.Close()
	m.reg = featurestore.NewRegistry(rdb, rc.RegistryPrefix, regOpts...)
	m.where = fmt.Sprintf("Redis %s db %d, prefix %q", strings.Join(o.Addrs(), ","), o.DB, rc.RegistryPrefix)
	err = act.run(ctx, m, pos)
	if errors.Is(err, featurestore.ErrMalformedVersion) {
		// A version id that cannot exist is a mistake on the command
		// line, not a version gone missing.
		return cli.Usage(err)
	}
	return err
}

// argsText shows positional arguments as typed: none, or each quoted.
func argsText(pos []string) string {
	if len(pos) == 0 {
		return "none"
	}
	q := make([]string, len(pos))
	for i, p := range pos {
		q[i] = fmt.Sprintf("%q", p)
	}
	return strings.Join(q, " ")
}

func registerCommon(fs *flag.FlagSet, rc *redisflag.Config, o *modelOpts) {
	*rc = redisflag.Default()
	rc.Register(fs)
	fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
	fs.StringVar(&o.verifyKey, "verify-key", "", "PEM `file` of the Ed25519 public key versions must be signed with (the annotators' --verify-key): "+
		"show, promote, candidate, rollback, export and import then refuse unsigned or badly signed versions, as the annotators do (empty: signatures not checked)")
}

func actionNames() []string {
	var n []string
	for _, a := range modelActions() {
		n = append(n, a.name)
	}
	return n
}

// Version is a stored version with the aliases pointing at it, as listed.
type Version struct {
	featurestore.VersionMeta
	Aliases []string `json:"aliases"`
}

// aliasMap returns version -> aliases.
func (m *modelsEnv) aliasMap(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for _, a := range aliases {
		v, err := m.reg.Alias(ctx, a)
		if errors.Is(err, featurestore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[v] = append(out[v], a)
	}
	return out, nil
}

// resolve turns an alias name into the version it points at; anything
// else is taken as a version id.
func (m *modelsEnv) resolve(ctx context.Context, ref string) (string, error) {
	if slices.Contains(aliases, ref) {
		return m.reg.Alias(ctx, ref)
	}
	return ref, nil
}

func listModels(ctx context.Context, m *modelsEnv, _ []string) error {
	metas, err := m.reg.List(ctx)
	if err != nil {
		return err
	}
	am, err := m.aliasMap(ctx)
	if err != nil {
		return err
	}
	vs := make([]Version, len(metas))
	for i, meta := range metas {
		vs[i] = Version{VersionMeta: meta, Aliases: am[meta.Version]}
		if vs[i].Aliases == nil {
			vs[i].Aliases = []string{}
		}
	}
	if m.opts.json {
		return writeJSON(m.env.Stdout, vs)
	}
	if len(vs) == 0 {
		fmt.Fprintf(m.env.Stdout, "no model versions stored (%s)\n", m.where)
		return nil
	}
	tw := tabwriter.NewWriter(m.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tALIASES\tKIND\tDIM\tCLASSES\tSTORED (UTC)\tTRAINING WINDOW\tMETRICS")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", v.Version, strings.Join(v.Aliases, ","), v.Kind, v.Dim, len(v.Classes),
			v.CreatedAt.UTC().Format(time.DateTime), v.TrainingWindow, listMetrics(v.Metrics))
	}
	return tw.Flush()
}

// listedMetrics are the metrics `models list` shows, those that tell
// versions apart at a glance; `models show` has them all.
var listedMetrics = []string{"heldout_hamming_loss", "heldout_average_precision", "train_bags"}

// listMetrics shows the listed metrics a version has, and how many more
// `models show` has, so that a row stays one screen wide.
func listMetrics(mt map[string]float64) string {
	var parts []string
	for _, k := range listedMetrics {
		if v, ok := mt[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%.4g", k, v))
		}
	}
	if more := len(mt) - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("(+%d: models show)", more))
	}
	return strings.Join(parts, " ")
}

// metricsText shows the metrics sorted by name.
func metricsText(mt map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(mt)) {
		parts = append(parts, fmt.Sprintf("%s=%.4g", k, mt[k]))
	}
	return strings.Join(parts, " ")
}

// Shown is the output of `models show`.
type Shown struct {
	Version
	// Verified says the blob matched its checksum and size and decoded
	// with the model catalog.
	Verified bool `json:"verified"`
	// SignatureVerified says the signature was checked (--verify-key) and
	// verifies; false when no key was given, whatever the signature.
	SignatureVerified bool          `json:"signature_verified"`
	InstanceLevel     bool          `json:"instance_level"`
	Params            models.Params `json:"params,omitempty"`
}

func showModel(ctx context.Context, m *modelsEnv, pos []string) error {
	v, err := m.resolve(ctx, pos[0])
	if err != nil {
		return err
	}
	blob, meta, err := m.reg.Get(ctx, v)
	if err != nil {
		return err
	}
	model, err := m.kinds.Decode(blob)
	if err != nil {
		return fmt.Errorf("%s: checksum ok but the model does not decode: %w", v, err)
	}
	am, err := m.aliasMap(ctx)
	if err != nil {
		return err
	}
	mm := model.Meta()
	s := Shown{Version: Version{VersionMeta: meta, Aliases: am[v]}, Verified: true, SignatureVerified: m.reg.Verifies(),
		InstanceLevel: mm.InstanceLevel, Params: mm.Params}
	if s.Aliases == nil {
		s.Aliases = []string{}
	}
	if m.opts.json {
		return writeJSON(m.env.Stdout, s)
	}
	w := m.env.Stdout
	fmt.Fprintf(w, "version          %s\n", meta.Version)
	if meta.ID != "" {
		fmt.Fprintf(w, "id               %s\n", meta.ID)
	}
	fmt.Fprintf(w, "aliases          %s\n", strings.Join(s.Aliases, ", "))
	fmt.Fprintf(w, "kind             %s (instance level: %v)\n", meta.Kind, mm.InstanceLevel)
	fmt.Fprintf(w, "input dimension  %d\n", meta.Dim)
	fmt.Fprintf(w, "classes          %d: %s\n", len(meta.Classes), strings.Join(meta.Classes, ", "))
	fmt.Fprintf(w, "stored           %s\n", meta.CreatedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "training window  %s\n", meta.TrainingWindow)
	if meta.Parent != "" {
		fmt.Fprintf(w, "parent           %s\n", meta.Parent)
	}
	fmt.Fprintf(w, "size             %d bytes, sha256 %s (verified, decodes)\n", meta.Size, meta.Checksum)
	switch {
	case m.reg.Verifies():
		fmt.Fprintf(w, "signature        verified with %s\n", m.opts.verifyKey)
	case meta.Signature == "":
		fmt.Fprintf(w, "signature        none; not checked (no --verify-key)\n")
	default:
		fmt.Fprintf(w, "signature        not checked (no --verify-key): annotators run with a key refuse the version unless it verifies\n")
	}
	if len(mm.Params) > 0 {
		var ps []string
		for _, k := range slices.Sorted(maps.Keys(mm.Params)) {
			ps = append(ps, k+"="+mm.Params[k])
		}
		fmt.Fprintf(w, "params           %s\n", strings.Join(ps, " "))
	}
	fmt.Fprintf(w, "metrics          %s\n", metricsText(meta.Metrics))
	return nil
}

// Promotion is the output of `models promote` and `models rollback`.
type Promotion struct {
	Current  string `json:"current"`
	Previous string `json:"previous,omitempty"`
	// Forced is set when --force overrode an incompatibility, which
	// Incompatible then describes.
	Forced       bool   `json:"forced,omitempty"`
	Incompatible string `json:"incompatible,omitempty"`
}

// ErrRefused marks a promotion refused by the guard.
var ErrRefused = errors.New("promotion refused")

func promoteModel(ctx context.Context, m *modelsEnv, pos []string) error {
	v, cur, cerr, err := m.againstCurrent(ctx, pos[0], "load")
	if err != nil {
		return err
	}
	res := Promotion{Current: v, Previous: cur}
	if cerr != nil {
		if !m.opts.force {
			return fmt.Errorf("%w: %s would replace current %s, but %w.\n"+
				"Annotators fed the current stream would dead-letter every bag. "+
				"Use --force to promote it anyway (then `mimlctl models rollback` undoes it)", ErrRefused, v, cur, cerr)
		}
		res.Forced, res.Incompatible = true, cerr.Error()
		fmt.Fprintf(m.env.Stderr, "mimlctl models promote: WARNING: forced: %v\n", cerr)
	}
	// The registry applies the guard again, against the current version
	// when it commits, and only if that is still cur: what was checked and
	// reported above is what the promotion replaces.
	opts := []featurestore.PromoteOption{featurestore.IfCurrent(cur)}
	if m.opts.force {
		opts = append(opts, featurestore.Force())
	}
	if err := m.reg.Promote(ctx, v, opts...); err != nil {
		if errors.Is(err, featurestore.ErrCurrentChanged) {
			return fmt.Errorf("%w; nothing promoted: look again (mimlctl models list) and run the promotion again", err)
		}
		return err
	}
	if res.Previous == v {
		res.Previous = ""
	}
	if m.opts.json {
		return writeJSON(m.env.Stdout, res)
	}
	if res.Previous != "" {
		fmt.Fprintf(m.env.Stdout, "promoted %s (was %s)\n", v, res.Previous)
	} else {
		fmt.Fprintf(m.env.Stdout, "promoted %s\n", v)
	}
	return nil
}

// againstCurrent resolves version, checks that it decodes (else
// ErrRefused, saying no annotator could use it: "load" it, "run" it) and
// compares it with
// the current version: cur is "" when nothing is served yet, and
// incompatible is featurestore.Compatible's verdict.
func (m *modelsEnv) againstCurrent(ctx context.Context, version, use string) (v, cur string, incompatible, err error) {
	if v, err = m.resolve(ctx, version); err != nil {
		return "", "", nil, err
	}
	blob, meta, err := m.reg.Get(ctx, v)
	if err != nil {
		return "", "", nil, err
	}
	if _, err := m.kinds.Decode(blob); err != nil {
		return "", "", nil, fmt.Errorf("%w: %s does not decode, so no annotator could %s it: %w", ErrRefused, v, use, err)
	}
	cur, err = m.reg.Alias(ctx, featurestore.AliasCurrent)
	switch {
	case errors.Is(err, featurestore.ErrNotFound):
		// Nothing served yet: nothing to be compatible with.
		return v, "", nil, nil
	case err != nil:
		return "", "", nil, err
	}
	curMeta, err := m.metaOf(ctx, cur)
	if err != nil {
		return "", "", nil, fmt.Errorf("read current %s to check compatibility: %w", cur, err)
	}
	return v, cur, featurestore.Compatible(curMeta, meta), nil
}

// metaOf returns a version's metadata without reading its blob (a current
// version whose blob has gone bad still has metadata to compare with).
func (m *modelsEnv) metaOf(ctx context.Context, v string) (featurestore.VersionMeta, error) {
	metas, err := m.reg.List(ctx)
	if err != nil {
		return featurestore.VersionMeta{}, err
	}
	for _, meta := range metas {
		if meta.Version == v {
			return meta, nil
		}
	}
	return featurestore.VersionMeta{}, fmt.Errorf("%s: %w", v, featurestore.ErrNotFound)
}

func rollbackModel(ctx context.Context, m *modelsEnv, _ []string) error {
	was, err := m.reg.Alias(ctx, featurestore.AliasCurrent)
	if err != nil {
		return err
	}
	v, err := m.reg.Rollback(ctx)
	if err != nil {
		return err
	}
	res := Promotion{Current: v, Previous: was}
	if m.opts.json {
		return writeJSON(m.env.Stdout, res)
	}
	fmt.Fprintf(m.env.Stdout, "rolled back to %s (was %s)\n", v, was)
	return nil
}

// Candidate is the output of `models candidate`.
type Candidate struct {
	Candidate string `json:"candidate"`
	Current   string `json:"current,omitempty"`
}

func candidateModel(ctx context.Context, m *modelsEnv, pos []string) error {
	v, cur, cerr, err := m.againstCurrent(ctx, pos[0], "run")
	if err != nil {
		return err
	}
	res := Candidate{Candidate: v, Current: cur}
	// Annotators score a candidate only on the bags current serves, so one
	// of another dimension or vocabulary would never be judged.
	if cerr != nil {
		return fmt.Errorf("%w: %s cannot run in shadow beside current %s: %w", ErrRefused, v, cur, cerr)
	}
	if err := m.reg.SetCandidate(ctx, v); err != nil {
		return err
	}
	if m.opts.json {
		return writeJSON(m.env.Stdout, res)
	}
	fmt.Fprintf(m.env.Stdout, "%s is the candidate, in shadow beside current %s\n", v, res.Current)
	return nil
}

// Deleted is the output of `models delete`.
type Deleted struct {
	Deleted string `json:"deleted"`
	// Aliases the version held before it was deleted (with --force).
	Aliases []string `json:"aliases"`
}

func deleteModel(ctx context.Context, m *modelsEnv, pos []string) error {
	v := pos[0]
	if slices.Contains(aliases, v) {
		// An alias moves under the operator's feet; deleting by it is
		// too easy to get wrong.
		return cli.Usagef("models delete takes a version id (vN), not the alias %q", v)
	}
	am, err := m.aliasMap(ctx)
	if err != nil {
		return err
	}
	held, err := m.reg.DeleteHeld(ctx, v, m.opts.force)
	if err != nil {
		if errors.Is(err, featurestore.ErrInUse) && !m.opts.force && !slices.Contains(am[v], featurestore.AliasCurrent) {
			return fmt.Errorf("%w; --force deletes it anyway", err)
		}
		return err
	}
	// The aliases it held when it was deleted, not when they were read
	// above (a promotion in between would make that "was current").
	res := Deleted{Deleted: v, Aliases: held}
	if res.Aliases == nil {
		res.Aliases = []string{}
	}
	if m.opts.json {
		return writeJSON(m.env.Stdout, res)
	}
	if len(res.Aliases) > 0 {
		fmt.Fprintf(m.env.Stdout, "deleted %s (was %s)\n", v, strings.Join(res.Aliases, ", "))
	} else {
		fmt.Fprintf(m.env.Stdout, "deleted %s\n", v)
	}
	return nil
}

func exportModel(ctx context.Context, m *modelsEnv, pos []string) error {
	v, err := m.resolve(ctx, pos[0])
	if err != nil {
		return err
	}
	blob, meta, err := m.reg.Get(ctx, v)
	if err != nil {
		return err
	}
	data, err := encodeExport(meta, blob, time.Now())
	if err != nil {
		return err
	}
	if m.opts.out == "" {
		_, err := m.env.Stdout.Write(data)
		return err
	}
	if err := writeFileAtomic(m.opts.out, data); err != nil {
		return err
	}
	if m.opts.json {
		return writeJSON(m.env.Stdout, struct {
			Version  string `json:"version"`
			File     string `json:"file"`
			Checksum string `json:"checksum"`
		}{v, m.opts.out, meta.Checksum})
	}
	fmt.Fprintf(m.env.Stdout, "exported %s to %s (sha256 %s)\n", v, m.opts.out, meta.Checksum)
	return nil
}

// writeFileAtomic writes through a temporary file renamed into place, so
// an interrupted export never leaves a truncated file under the name.
func writeFileAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(dirOf(name), ".mimlctl-export-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func dirOf(name string) string {
	if i := strings.LastIndexByte(name, os.PathSeparator); i >= 0 {
		return name[:i+1]
	}
	return "."
}

// Imported is the output of `models import`.
type Imported struct {
	featurestore.VersionMeta
	// From is the version id in the exporting registry, when the file
	// was an export.
	From string `json:"imported_from,omitempty"`
}

func importModel(ctx context.Context, m *modelsEnv, pos []string) error {
	var (
		data []byte
		err  error
	)
	if pos[0] == "-" {
		in := m.env.Stdin
		if in == nil {
			in = os.Stdin
		}
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return err
	}
	blob, meta, err := decodeImport(data, m.kinds)
	if err != nil {
		return fmt.Errorf("import %s: %w", pos[0], err)
	}
	from := meta.Version
	// The registry assigns the id and the time; a parent id names a
	// version of the exporting registry, which means nothing here.
	meta.Version, meta.Parent, meta.CreatedAt = "", "", time.Time{}
	stored, err := m.reg.Put(ctx, blob, meta)
	if err != nil {
		return err
	}
	res := Imported{VersionMeta: stored, From: from}
	if m.opts.json {
		return writeJSON(m.env.Stdout, res)
	}
	if from != "" {
		fmt.Fprintf(m.env.Stdout, "imported %s as %s (%s, dim %d, %d classes; not promoted)\n", from, stored.Version, stored.Kind, stored.Dim, len(stored.Classes))
	} else {
		fmt.Fprintf(m.env.Stdout, "imported as %s (%s, dim %d, %d classes; not promoted)\n", stored.Version, stored.Kind, stored.Dim, len(stored.Classes))
	}
	return nil
}
