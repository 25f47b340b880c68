package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/eval"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media/mediaset"
	"github.com/mimlstream/mimlstream/internal/media/text"
	"github.com/mimlstream/mimlstream/internal/media/tfidf"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
)

// evalFlags are the settings of `retrainer eval`.
type evalFlags struct {
	data, model, mode, split, out, sweep, sweepValues, plot string
	listParams, foldsOut                                    string
	regions, passages                                       string
	folds, repeats, workers, dim                            int
	seed                                                    int64
	stratify, json                                          bool
	params                                                  cli.StringList
}

func runEval(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("retrainer-eval", `Usage: retrainer eval --data PATH --model KIND [flags]

Evaluates a model kind with the protocols of Pham et al. 2017, §6:
inductive R x k-fold cross-validation (annotate held-out bags without their
labels) or transductive (fit on all bags, annotate them knowing their label
sets). With --sweep, repeats the evaluation for each prune or subset fraction
and reports accuracy, training time and speed-up (Figures 10 and 11).
A .jsonl manifest of photos (lines with "image" and a "gt_mask", as
msrc_v2_dev's bags.jsonl) is segmented and featurized as the service does
(--regions service) or cut along its ground-truth regions (--regions gt);
each predicted region paints its label on its pixels, and instance_accuracy
is the share of ground-truth regions whose pixels mostly carry their class
(pixel_accuracy: the share of pixels). A .jsonl manifest of documents (lines
with "text" or "path" and ground-truth "passages", as text_dev's docs.jsonl)
is cut into passages (--passages) and featurized as the service does, the
model fitted on them weighted by the IDF of its training passages; each
predicted passage paints its label on the code points nearest its centre,
and instance_accuracy is the share of ground-truth passages whose code
points mostly carry their class (char_accuracy: the share of code points).
Model kinds: `+kindList(e.registry)+`; inherit+KIND (e.g. inherit+slr) fits
KIND on every instance labeled with each of its bag's labels (the baseline).
--list-params KIND prints the --param keys of a kind (name, type, default,
doc); any other key is rejected.`, e.stderr)
	var f evalFlags
	fs.StringVar(&f.data, "data", "", "dataset `file` (.mat, .arff, .data, .jsonl, .csv)")
	fs.StringVar(&f.model, "model", "orlr", "model `kind`")
	fs.StringVar(&f.mode, "mode", string(models.Inductive), "protocol: inductive or transductive")
	fs.IntVar(&f.folds, "folds", 10, "`k` of k-fold cross-validation (inductive mode, --split cv)")
	fs.IntVar(&f.repeats, "repeats", 1, "repeat the protocol `R` times with different folds and fit seeds")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the fold splits and of the fits")
	fs.BoolVar(&f.stratify, "stratify", false, "stratify the folds by bag label set")
	fs.StringVar(&f.split, "split", "cv", "cv: cross-validation; paper: the dataset's own train/test split (MSCV2 trnidx/tstidx)")
	fs.Var(&f.params, "param", "model parameter `key=value` (repeatable; see --list-params)")
	fs.StringVar(&f.listParams, "list-params", "", "print the parameters of model `kind` (name, type, default, doc) and exit")
	fs.IntVar(&f.workers, "workers", 0, "parallelism of fitting and annotation, and the cores the run uses (GOMAXPROCS; 0: all cores)")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table and progress bar")
	fs.StringVar(&f.out, "out", "", "write the result to this `file` instead of standard output")
	fs.StringVar(&f.sweep, "sweep", "", "sweep a speed-up parameter: prune or subset")
	fs.StringVar(&f.sweepValues, "sweep-values", "", "comma-separated fractions of the sweep (default prune: 0,0.1,...,0.9; subset: 1,0.8,...,0.1)")
	fs.StringVar(&f.foldsOut, "folds-out", "", "also write the protocol's folds (repeat, fold, 0-based train and test bag indices and the bag names) as JSON to this `file`, to run another implementation on the same folds")
	fs.StringVar(&f.regions, "regions", "service", "photo and document manifests: the instances are the service's regions or passages (service) or the ground-truth ones (gt)")
	fs.StringVar(&f.passages, "passages", string(text.DefaultSegmenter), "document manifests: the passages: paragraphs (the service's: one of more than 400 words cut into windows), windows (Andrews et al.'s 50 words every 25) or sentences")
	fs.IntVar(&f.dim, "dim", text.DefaultDim, "document manifests: hashed feature `dimension` (a kind without a sparse path, mimlca, needs a small one: 1024)")
	fs.StringVar(&f.plot, "plot", "", "with --sweep, draw accuracy and time against the fraction to this `file` (.png or .svg)")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if f.listParams != "" {
		kind, err := e.registry.Lookup(f.listParams)
		if err != nil {
			return fmt.Errorf("%w: --list-params: %w", errUsage, err)
		}
		return writeParams(e.stdout, kind)
	}
	return evalMain(ctx, e, f)
}

// writeParams prints the parameters a kind declares.
func writeParams(w io.Writer, kind models.Kind) error {
	fmt.Fprintf(w, "%s: %s\n", kind.Name, kind.Description)
	switch {
	case kind.Params == nil:
		fmt.Fprintln(w, "\nno parameter declarations: keys are passed through unchecked")
		return nil
	case len(kind.Params) == 0:
		fmt.Fprintln(w, "\nno parameters")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nparam\ttype\tdefault\tdoc\n")
	for _, s := range kind.Params {
		def := s.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.TypeString(), def, s.Doc)
	}
	return tw.Flush()
}

func evalMain(ctx context.Context, e *env, f evalFlags) error {
	cfg, kind, err := f.config(e.registry)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	// --workers bounds the cores the run uses, the Go runtime's too: with
	// more Ps than workers the spare ones ran the garbage collector's idle
	// mark workers, CPU the run did not ask for (mi-SVM's default on
	// Musk1, 5 × 10-fold, --workers 1: median process CPU 4.90 s with the
	// machine's 2 Ps, 3.82 s with 1, over six interleaved runs; Elephant
	// 5% less).
	if f.workers > 0 && f.workers < runtime.GOMAXPROCS(0) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(f.workers))
	}
	var values []float64
	var baseline float64
	if f.sweep != "" {
		if values, baseline, err = f.sweepSettings(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	} else if f.plot != "" {
		return fmt.Errorf("%w: --plot needs --sweep", errUsage)
	}

	start := time.Now()
	var data *mil.Dataset
	var split *eval.Split
	if k := mediaset.KindOf(f.data); k != mediaset.NotMedia {
		if f.split != "cv" {
			return fmt.Errorf("%w: --split %s: a media manifest has no split of its own", errUsage, f.split)
		}
		opt, err := f.mediaOptions(k)
		if err != nil {
			return err
		}
		set, err := mediaset.Load(ctx, f.data, opt)
		if err != nil {
			return err
		}
		data, cfg.InstanceScore = set.Data, set.InstanceScore
	} else if data, split, err = loadData(f.data, f.split); err != nil {
		return err
	}
	cfg.Split = split
	cfg.Logger = e.logger
	if f.foldsOut != "" {
		if err := writeFolds(f.foldsOut, data, cfg); err != nil {
			return err
		}
	}
	if cfg.Mode == models.Transductive && split == nil {
		e.logger.Info("transductive protocol: one fit on all bags per repeat; --folds does not apply")
	}
	e.logger.Info("dataset loaded", "path", f.data, "name", data.Name, "bags", len(data.Bags),
		"instances", data.NumInstances(), "classes", len(data.Classes), "dim", data.Dim,
		"seconds", time.Since(start).Seconds())

	if !f.json {
		total := f.repeats
		if cfg.Split == nil && cfg.Mode == models.Inductive {
			total *= f.folds
		}
		desc := fmt.Sprintf("%s %s", kind.Name, cfg.Mode)
		if values != nil {
			total *= len(values)
			desc = fmt.Sprintf("%s %s sweep", kind.Name, f.sweep)
		}
		bar := progressbar.NewOptions(total, progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription(desc), progressbar.OptionShowCount(),
			progressbar.OptionSetRenderBlankState(true), progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.stderr) }))
		cfg.Progress = func(done, total int) {
			if total != bar.GetMax() {
				bar.ChangeMax(total)
			}
			_ = bar.Set(done) // a progress bar that cannot draw is no reason to stop
		}
	} else {
		// No bar beside JSON (scripts read stdout, often with stderr in
		// the same log); a line per fit says a long run is moving.
		start := time.Now()
		cfg.Progress = func(done, total int) {
			e.logger.Info("fit done", "done", done, "of", total, "seconds", time.Since(start).Seconds())
		}
	}

	var result any
	var table func(io.Writer) error
	if values == nil {
		rep, err := eval.Run(ctx, kind, data, cfg)
		if err != nil {
			return err
		}
		result, table = rep, func(w io.Writer) error { return writeReport(w, rep) }
	} else {
		sr, err := eval.RunSweep(ctx, kind, data, cfg, f.sweep, values, baseline)
		if err != nil {
			return err
		}
		if f.plot != "" {
			if err := writePlot(f.plot, sr); err != nil {
				return err
			}
			e.logger.Info("plot written", "path", f.plot)
		}
		result, table = sr, func(w io.Writer) error { return writeSweep(w, sr) }
	}

	emit := func(w io.Writer) error {
		if !f.json {
			return table(w)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(result)
	}
	if f.out == "" {
		return emit(e.stdout)
	}
	if err := writeFile(f.out, emit); err != nil {
		return err
	}
	e.logger.Info("result written", "path", f.out)
	return nil
}

// writeFile creates path and fills it with write, reporting the first error
// including the one of closing (where a full disk shows up).
func writeFile(path string, write func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(file); err != nil {
		file.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// config checks the flags that do not need the data and builds the protocol.
func (f *evalFlags) config(reg *models.Registry) (eval.Config, models.Kind, error) {
	var cfg eval.Config
	if f.data == "" {
		return cfg, models.Kind{}, errors.New("--data is required")
	}
	kind, err := lookupKind(reg, f.model)
	if err != nil {
		return cfg, kind, err
	}
	if mediaset.KindOf(f.data) == mediaset.Documents && !strings.HasSuffix(kind.Name, tfidf.Suffix) {
		// Documents are fitted as the retrainer fits them: the kind's
		// IDF-weighted form, whose keys the parameters are checked against.
		kind = tfidf.Weighted(kind)
	}
	mode, err := models.ParseMode(f.mode)
	if err != nil {
		return cfg, kind, err
	}
	if f.repeats < 1 {
		return cfg, kind, fmt.Errorf("--repeats %d: want at least 1", f.repeats)
	}
	if mode == models.Inductive && f.split == "cv" && f.folds < 2 {
		return cfg, kind, fmt.Errorf("--folds %d: want at least 2", f.folds)
	}
	if f.split != "cv" && f.split != "paper" {
		return cfg, kind, fmt.Errorf("--split %q: want cv or paper", f.split)
	}
	params, err := models.ParseParams(f.params)
	if err != nil {
		return cfg, kind, err
	}
	if err := kind.CheckParams(params); err != nil {
		return cfg, kind, err
	}
	return eval.Config{Mode: mode, Folds: f.folds, Repeats: f.repeats, Seed: f.seed, Stratify: f.stratify,
		Params: params, Workers: f.workers}, kind, nil
}

// sweepSettings returns the fractions to sweep, with the baseline run first
// when the list does not contain it (so the progress bar counts it).
func (f *evalFlags) sweepSettings() ([]float64, float64, error) {
	values, baseline, err := eval.SweepDefaults(f.sweep)
	if err != nil {
		return nil, 0, err
	}
	if f.sweepValues != "" {
		values = nil
		for _, s := range strings.Split(f.sweepValues, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || v < 0 || v > 1 {
				return nil, 0, fmt.Errorf("--sweep-values: %q is not a fraction in [0,1]", s)
			}
			values = append(values, v)
		}
	}
	if !slices.Contains(values, baseline) {
		values = append([]float64{baseline}, values...)
	}
	if f.plot != "" {
		if _, err := plotFormat(f.plot); err != nil {
			return nil, 0, err
		}
	}
	return values, baseline, nil
}

func kindList(reg *models.Registry) string {
	if names := reg.Names(); len(names) > 0 {
		return strings.Join(names, ", ")
	}
	return "(none registered)"
}

// loadData reads the dataset and, for --split paper, its own train/test
// split, which only MSCV2 files carry.
func loadData(path, split string) (*mil.Dataset, *eval.Split, error) {
	if split != "paper" {
		d, err := dataset.Load(path)
		return d, nil, err
	}
	if strings.ToLower(filepath.Ext(path)) != ".mat" {
		return nil, nil, fmt.Errorf("--split paper: %s has no train/test split of its own (only MSCV2 .mat files do)", path)
	}
	d, s, err := dataset.LoadMSCV2(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--split paper: %w", err)
	}
	return d, &eval.Split{Train: s.Train, Test: s.Test}, nil
}

func plotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot %s: want a .png or .svg file", path)
	}
}

func writePlot(path string, sr *eval.SweepReport) error {
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	return writeFile(path, func(w io.Writer) error { return eval.PlotSweep(w, format, sr) })
}

func writeReport(w io.Writer, rep *eval.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", rep.Model)
	fmt.Fprintf(tw, "dataset\t%s (%d bags, %d instances, %d classes)\n", rep.Dataset, rep.Bags, rep.Instances, rep.Classes)
	fmt.Fprintf(tw, "protocol\t%s, seed %d\n", rep.Protocol, rep.Seed)
	if len(rep.Params) > 0 {
		keys := make([]string, 0, len(rep.Params))
		for k := range rep.Params {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = k + "=" + rep.Params[k]
		}
		fmt.Fprintf(tw, "params\t%s\n", strings.Join(keys, " "))
	}
	fmt.Fprintf(tw, "\nmeasure\tmean\tstd\tfolds\n")
	for _, name := range []string{measure.InstanceAccuracy, eval.PixelAccuracy, eval.CharAccuracy, measure.BagAccuracy, measure.HammingLoss,
		measure.RankingLoss, measure.OneError, measure.Coverage, measure.AveragePrecision} {
		if s := rep.Measure(name); s != nil {
			fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%d\n", name, s.Mean, s.Std, s.N)
		}
	}
	fmt.Fprintf(tw, "\ntrain_seconds\t%.3f\t(%.3f per fit)\n", rep.TrainSeconds, rep.TrainSeconds/float64(max(1, len(rep.FoldTrainSeconds))))
	if rep.TrainCPUSeconds > 0 {
		fmt.Fprintf(tw, "train_cpu_seconds\t%.3f\n", rep.TrainCPUSeconds)
	}
	fmt.Fprintf(tw, "annotate_seconds\t%.3f\n", rep.AnnotateSeconds)
	return tw.Flush()
}

func writeSweep(w io.Writer, sr *eval.SweepReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%s on %s: %s sweep, accuracy = %s, speed-up vs %s=%g\n\n", sr.Model, sr.Dataset, sr.Param, sr.Metric, sr.Param, sr.Baseline)
	fmt.Fprintf(tw, "%s\tmean\tstd\ttrain_seconds\tspeed_up\ttrain_cpu_seconds\tcpu_speed_up\t\n", sr.Param)
	for _, p := range sr.Points {
		fmt.Fprintf(tw, "%g\t%.4f\t%.4f\t%.3f\t%.2f\t%.3f\t%.2f\t\n", p.Value, p.Accuracy.Mean, p.Accuracy.Std,
			p.TrainSeconds, p.SpeedUp, p.TrainCPUSeconds, p.CPUSpeedUp)
	}
	return tw.Flush()
}

// writeFolds writes the fits eval.Run will make, with the bag names, so a
// peer implementation (e.g. Doran's misvm) can be scored on the same folds.
func writeFolds(path string, data *mil.Dataset, cfg eval.Config) error {
	fits, err := eval.Plan(data, cfg)
	if err != nil {
		return fmt.Errorf("folds: %w", err)
	}
	names := make([]string, len(data.Bags))
	for i := range data.Bags {
		names[i] = data.Bags[i].ID
	}
	b, err := json.Marshal(struct {
		Dataset string            `json:"dataset"`
		Seed    int64             `json:"seed"`
		Bags    []string          `json:"bags"`
		Fits    []eval.PlannedFit `json:"fits"`
	}{data.Name, cfg.Seed, names, fits})
	if err != nil {
		return fmt.Errorf("folds: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("folds: %w", err)
	}
	return nil
}

// lookupKind finds a kind, or for inherit+KIND the inherit-the-bag's-labels
// baseline on KIND.
func lookupKind(reg *models.Registry, name string) (models.Kind, error) {
	if inner, ok := strings.CutPrefix(name, "inherit+"); ok {
		k, err := reg.Lookup(inner)
		if err != nil {
			return k, err
		}
		return eval.Inherit(k), nil
	}
	return reg.Lookup(name)
}

// mediaOptions checks the flags of a media manifest of kind k.
func (f evalFlags) mediaOptions(k mediaset.Kind) (mediaset.Options, error) {
	opt := mediaset.Options{Workers: f.workers}
	switch f.regions {
	case "gt":
		opt.GT = true
	case "service":
	default:
		return opt, fmt.Errorf("%w: --regions %q: want service or gt", errUsage, f.regions)
	}
	if k == mediaset.Documents {
		if f.dim < 1 {
			return opt, fmt.Errorf("%w: --dim %d: want a positive dimension", errUsage, f.dim)
		}
		opt.Passages, opt.Dim = text.Segmenter(f.passages), f.dim
		if _, err := opt.TextFeaturizer(); err != nil {
			return opt, fmt.Errorf("%w: --passages %s, --dim %d: %w", errUsage, f.passages, f.dim, err)
		}
	}
	return opt, nil
}
