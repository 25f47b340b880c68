package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mimlstream/mimlstream/internal/dataset"
	"github.com/mimlstream/mimlstream/internal/folds"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/models/catalog"
	"github.com/mimlstream/mimlstream/internal/testsupport/evaltest"
)

// writeData saves n copies of one bag, whose measures under the echo model
// (evaltest.Echo) are worked out by hand. Labels {0,2}; instances:
//
//	(0.9, 0.1, 0)   true 0, annotated 0
//	(0.1, 0.7, 0.2) true 2, annotated 1 inductively, 2 transductively
//	(0, 0, 0.6)     true 2, annotated 2
//
// Inductive: instance accuracy 2/3; bag prediction {0,1,2}: Hamming loss
// 1/3. Bag scores (0.9, 0.7, 0.6) rank c0, c1, c2: one-error 0, coverage 2,
// ranking loss 1/2 (c2 below c1), average precision (1/1 + 2/3)/2 = 5/6.
// Every fold holds copies of the same bag, so every std is 0.
func writeData(t *testing.T, n int) string {
	t.Helper()
	d := &mil.Dataset{Name: "copies", Classes: []string{"a", "b", "c"}, Dim: 3}
	for i := 0; i < n; i++ {
		d.Bags = append(d.Bags, mil.Bag{ID: fmt.Sprint(i), Labels: []int{0, 2}, InstanceLabels: []int{0, 2, 2},
			Instances: [][]float64{{0.9, 0.1, 0}, {0.1, 0.7, 0.2}, {0, 0, 0.6}}})
	}
	path := filepath.Join(t.TempDir(), "copies.jsonl")
	if err := dataset.SaveJSONL(path, d); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeBinary saves a binary MIL set of 12 bags: 6 positive, with a 0.9
// witness the echo model detects except in 2 of them (witness 0.3), and 6
// negative: 10 of 12 bags are classified right.
func writeBinary(t *testing.T) string {
	t.Helper()
	d := &mil.Dataset{Name: "binary", Classes: []string{"positive"}, Dim: 1}
	for i := 0; i < 12; i++ {
		b := mil.Bag{ID: fmt.Sprint(i), Labels: []int{}, Instances: [][]float64{{0.1}, {0.2}}}
		if i < 6 {
			b.Labels = []int{0}
			b.Instances[0][0] = 0.9
			if i < 2 {
				b.Instances[0][0] = 0.3
			}
		}
		d.Bags = append(d.Bags, b)
	}
	path := filepath.Join(t.TempDir(), "binary.jsonl")
	if err := dataset.SaveJSONL(path, d); err != nil {
		t.Fatal(err)
	}
	return path
}

func testEnv() (*env, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return &env{
		stdout:   &stdout,
		stderr:   &stderr,
		logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		registry: models.NewRegistry(evaltest.Echo(nil, "")),
	}, &stdout, &stderr
}

func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	e, out, errOut := testEnv()
	code = run(context.Background(), e, args)
	return code, out.String(), errOut.String()
}

type stat struct {
	Mean *float64 `json:"mean"`
	Std  *float64 `json:"std"`
}

func checkStat(t *testing.T, name string, s *stat, mean float64) {
	t.Helper()
	if s == nil || s.Mean == nil || s.Std == nil {
		t.Errorf("%s: missing or without mean and std", name)
		return
	}
	if math.Abs(*s.Mean-mean) > 1e-12 || *s.Std != 0 {
		t.Errorf("%s = %v ± %v, want %v ± 0", name, *s.Mean, *s.Std, mean)
	}
}

func TestEvalJSON(t *testing.T) {
	path := writeData(t, 12)
	// --folds comes from the environment, as every flag may.
	t.Setenv("MIMLSTREAM_RETRAINER_EVAL_FOLDS", "4")
	code, stdout, stderr := runArgs(t, "eval", "--data", path, "--model", "echo", "--seed", "1",
		"--mode", "inductive", "--param", "c=2", "--param", "iters=5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Count(stdout, "\n{") > 0 || !strings.HasPrefix(stdout, "{") {
		t.Errorf("stdout is not one JSON object:\n%s", stdout)
	}
	var got struct {
		Model            *string           `json:"model"`
		Dataset          *string           `json:"dataset"`
		Folds            *int              `json:"folds"`
		Repeats          *int              `json:"repeats"`
		Mode             *string           `json:"mode"`
		Seed             *int64            `json:"seed"`
		Params           map[string]string `json:"params"`
		InstanceAccuracy *stat             `json:"instance_accuracy"`
		HammingLoss      *stat             `json:"hamming_loss"`
		RankingLoss      *stat             `json:"ranking_loss"`
		OneError         *stat             `json:"one_error"`
		Coverage         *stat             `json:"coverage"`
		AveragePrecision *stat             `json:"average_precision"`
		BagAccuracy      *stat             `json:"bag_accuracy"`
		TrainSeconds     *float64          `json:"train_seconds"`
		FoldTrainSeconds []float64         `json:"fold_train_seconds"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if got.Model == nil || *got.Model != "echo" || got.Dataset == nil || *got.Dataset != "copies" ||
		got.Folds == nil || *got.Folds != 4 || got.Repeats == nil || *got.Repeats != 1 ||
		got.Mode == nil || *got.Mode != "inductive" || got.Seed == nil || *got.Seed != 1 {
		t.Errorf("header fields wrong: %s", stdout[:min(400, len(stdout))])
	}
	if got.Params["c"] != "2" || got.Params["iters"] != "5" {
		t.Errorf("params = %v", got.Params)
	}
	checkStat(t, "instance_accuracy", got.InstanceAccuracy, 2.0/3)
	checkStat(t, "hamming_loss", got.HammingLoss, 1.0/3)
	checkStat(t, "ranking_loss", got.RankingLoss, 0.5)
	checkStat(t, "one_error", got.OneError, 0)
	checkStat(t, "coverage", got.Coverage, 2)
	checkStat(t, "average_precision", got.AveragePrecision, 5.0/6)
	if got.BagAccuracy != nil {
		t.Error("bag_accuracy reported for multi-label data")
	}
	if got.TrainSeconds == nil || len(got.FoldTrainSeconds) != 4 {
		t.Errorf("train_seconds %v, fold_train_seconds %v", got.TrainSeconds, got.FoldTrainSeconds)
	}
	if strings.Contains(stderr, "%") {
		t.Errorf("progress bar drawn with --json: %q", stderr)
	}
}

// TestEvalJSONLogsEachFit: with --json there is no progress bar, but a log
// line per fit tells a long run is moving.
func TestEvalJSONLogsEachFit(t *testing.T) {
	path := writeData(t, 6)
	e, _, errOut := testEnv()
	e.logger = slog.New(slog.NewTextHandler(errOut, nil))
	if code := run(context.Background(), e, []string{"eval", "--data", path, "--model", "echo", "--folds", "3", "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for done := 1; done <= 3; done++ {
		if want := fmt.Sprintf(`msg="fit done" done=%d of=3`, done); !strings.Contains(errOut.String(), want) {
			t.Errorf("no %q on stderr:\n%s", want, errOut)
		}
	}
}

func TestEvalTransductiveTable(t *testing.T) {
	path := writeData(t, 6)
	code, stdout, stderr := runArgs(t, "eval", "--data", path, "--model", "echo", "--mode", "transductive", "--repeats", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Knowing the labels {0,2}, the middle instance is annotated 2: all right.
	for _, want := range []string{"transductive", "instance_accuracy  1.0000  0.0000  2", "train_seconds"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "100%") || !strings.Contains(stderr, "2/2") {
		t.Errorf("no finished progress bar on stderr: %q", stderr)
	}
}

func TestEvalBinary(t *testing.T) {
	path := writeBinary(t)
	// 12 folds of one bag: bag accuracy is the pooled 10/12.
	code, stdout, stderr := runArgs(t, "eval", "--data", path, "--model", "echo", "--folds", "12", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		BagAccuracy      *stat `json:"bag_accuracy"`
		InstanceAccuracy *stat `json:"instance_accuracy"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.BagAccuracy == nil || math.Abs(*got.BagAccuracy.Mean-10.0/12) > 1e-12 {
		t.Errorf("bag_accuracy = %+v, want mean 10/12", got.BagAccuracy)
	}
	if got.InstanceAccuracy != nil {
		t.Error("instance_accuracy reported without instance labels")
	}
}

func TestEvalSweep(t *testing.T) {
	path := writeData(t, 8)
	dir := t.TempDir()
	plotPath := filepath.Join(dir, "sweep.png")
	outPath := filepath.Join(dir, "sweep.json")
	code, stdout, stderr := runArgs(t, "eval", "--data", path, "--model", "echo", "--folds", "2",
		"--sweep", "prune", "--sweep-values", "0.5,0.2", "--plot", plotPath, "--json", "--out", outPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout not empty with --out: %q", stdout)
	}
	raw, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Param  string `json:"param"`
		Metric string `json:"metric"`
		Points []struct {
			Value        float64  `json:"value"`
			Accuracy     stat     `json:"accuracy"`
			TrainSeconds *float64 `json:"train_seconds"`
			SpeedUp      *float64 `json:"speed_up"`
		} `json:"points"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Param != "prune" || got.Metric != "instance_accuracy" || len(got.Points) != 3 {
		t.Fatalf("sweep = %s", raw)
	}
	for i, want := range []float64{0, 0.5, 0.2} {
		p := got.Points[i]
		if p.Value != want || p.TrainSeconds == nil || p.SpeedUp == nil {
			t.Errorf("point %d = %+v, want value %v with time and speed-up", i, p, want)
		}
		checkStat(t, fmt.Sprintf("point %v accuracy", want), &p.Accuracy, 2.0/3)
	}
	png, err := os.ReadFile(plotPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG\r\n")) {
		t.Errorf("plot is %d bytes, not a PNG", len(png))
	}

	// Without --json: the table, with the speed-up column.
	code, stdout, stderr = runArgs(t, "eval", "--data", path, "--model", "echo", "--folds", "2",
		"--sweep", "subset", "--sweep-values", "0.5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "speed_up") || !strings.Contains(stdout, "subset") || strings.Count(stdout, "0.6667") != 2 {
		t.Errorf("sweep table:\n%s", stdout)
	}
}

func TestEvalUsage(t *testing.T) {
	path := writeData(t, 4)
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"help", []string{"eval", "--help"}, 0, "MIMLSTREAM_RETRAINER_EVAL_FOLDS"},
		{"no data", []string{"eval", "--model", "echo"}, 2, "--data is required"},
		{"unknown model", []string{"eval", "--data", path, "--model", "nope"}, 2, `unknown model kind "nope"`},
		{"bad mode", []string{"eval", "--data", path, "--model", "echo", "--mode", "sideways"}, 2, "sideways"},
		{"bad param", []string{"eval", "--data", path, "--model", "echo", "--param", "novalue"}, 2, "key=value"},
		{"one fold", []string{"eval", "--data", path, "--model", "echo", "--folds", "1"}, 2, "--folds 1"},
		{"plot without sweep", []string{"eval", "--data", path, "--model", "echo", "--plot", "x.png"}, 2, "--plot needs --sweep"},
		{"bad sweep", []string{"eval", "--data", path, "--model", "echo", "--sweep", "shrink"}, 2, "unknown sweep"},
		{"bad sweep value", []string{"eval", "--data", path, "--model", "echo", "--sweep", "prune", "--sweep-values", "2"}, 2, "fraction"},
		{"bad plot format", []string{"eval", "--data", path, "--model", "echo", "--sweep", "prune", "--plot", "x.gif"}, 2, ".png or .svg"},
		{"unknown flag", []string{"eval", "--bogus"}, 2, "bogus"},
		{"missing file", []string{"eval", "--data", path + ".missing.jsonl", "--model", "echo"}, 1, "missing"},
		{"no own split", []string{"eval", "--data", path, "--model", "echo", "--split", "paper"}, 1, "no train/test split"},
		{"more folds than bags", []string{"eval", "--data", path, "--model", "echo", "--folds", "5"}, 1, "k=5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runArgs(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

func TestDispatcher(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--help"}, 0, "eval ", ""},
		{[]string{"help"}, 0, "Commands:", ""},
		{nil, 2, "", "Commands:"},
		{[]string{"bogus"}, 2, "", `unknown command "bogus"`},
	}
	for _, tc := range tests {
		code, stdout, stderr := runArgs(t, tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q", tc.args, code, stdout, stderr)
		}
	}
}

func TestLoadPaperSplit(t *testing.T) {
	d, split, err := loadData(filepath.Join("..", "..", "testdata", "mscv2", "MSCV2.mat"), "paper")
	if err != nil {
		t.Fatal(err)
	}
	// MSCV2's trnidx/tstidx: 532 training and 59 test bags, disjoint, covering all 591.
	if len(d.Bags) != 591 || split == nil || len(split.Train) != 532 || len(split.Test) != 59 {
		t.Fatalf("bags %d, split %d/%d", len(d.Bags), len(split.Train), len(split.Test))
	}
	seen := make([]bool, len(d.Bags))
	for _, i := range append(slices.Clone(split.Train), split.Test...) {
		if seen[i] {
			t.Fatalf("bag %d in both parts", i)
		}
		seen[i] = true
	}
}

// TestEvalListParams checks --list-params prints every declared parameter
// of every catalog kind, and runs nothing else.
func TestEvalListParams(t *testing.T) {
	reg := catalog.New()
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			kind, _ := reg.Lookup(name)
			e, stdout, stderr := testEnv()
			e.registry = reg
			if code := run(context.Background(), e, []string{"eval", "--list-params", name}); code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			out := stdout.String()
			if !strings.HasPrefix(out, name+": "+kind.Description) {
				t.Errorf("output does not start with the kind and its description:\n%s", out)
			}
			if len(kind.Params) == 0 && !strings.Contains(out, "no parameters") {
				t.Errorf("kind without parameters:\n%s", out)
			}
			for _, s := range kind.Params {
				def := s.Default
				if def == "" {
					def = "-"
				}
				// One row per parameter: name, type, default, doc.
				if !slices.ContainsFunc(strings.Split(out, "\n"), func(line string) bool {
					f := strings.Fields(line)
					return len(f) > 3 && f[0] == s.Name && f[1] == s.TypeString() && f[2] == def && strings.HasSuffix(line, s.Doc)
				}) {
					t.Errorf("no row for %s %s %s %q in:\n%s", s.Name, s.TypeString(), def, s.Doc, out)
				}
			}
		})
	}
	e, _, stderr := testEnv()
	if code := run(context.Background(), e, []string{"eval", "--list-params", "nope"}); code != 2 || !strings.Contains(stderr.String(), `unknown model kind "nope"`) {
		t.Errorf("--list-params nope: exit %d, stderr %q; want 2 and the unknown kind", code, stderr)
	}
}

// TestEvalRejectsUndeclaredParams checks a key the kind does not declare,
// or a value not of its type, is a usage error naming the valid keys,
// before any data is read or fit run.
func TestEvalRejectsUndeclaredParams(t *testing.T) {
	path := writeData(t, 4)
	rec := &evaltest.Recorder{}
	kind := evaltest.Echo(rec, "")
	kind.Params = []models.ParamSpec{
		{Name: "iters", Type: models.ParamInt, Default: "3", Doc: "iterations"},
		{Name: "c", Type: models.ParamFloat, Default: "1", Doc: "trade-off"},
	}
	tests := []struct {
		param string
		code  int
		want  string
	}{
		{"itres=5", 2, `echo: unknown param "itres" (valid: c, iters)`},
		{"iters=five", 2, `param iters="five": want an integer`},
		{"c=2", 0, ""},
	}
	for _, tc := range tests {
		e, _, stderr := testEnv()
		e.registry = models.NewRegistry(kind)
		code := run(context.Background(), e, []string{"eval", "--data", path, "--model", "echo", "--folds", "2", "--json", "--param", tc.param})
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("--param %s: exit %d, stderr %q; want exit %d and %q", tc.param, code, stderr, tc.code, tc.want)
		}
	}
	if n := len(rec.Fits()); n != 2 {
		t.Errorf("%d fits, want 2 (only the valid run's two folds)", n)
	}
}

// TestEvalFoldsOut: --folds-out writes the folds the run uses: per repeat,
// the test folds partition the bags, train is their complement, and they
// are folds.KFold's (seed, repeat) folds. It catches an export that drifts
// from the folds eval.Run scores, which would make a peer comparison
// meaningless.
func TestEvalFoldsOut(t *testing.T) {
	path := writeBinary(t)
	out := filepath.Join(t.TempDir(), "folds.json")
	code, _, stderr := runArgs(t, "eval", "--data", path, "--model", "echo", "--folds", "3", "--repeats", "2", "--seed", "7", "--folds-out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Bags []string `json:"bags"`
		Fits []struct {
			Repeat, Fold int
			Train, Test  []int
		} `json:"fits"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	n := len(got.Bags)
	if n == 0 || len(got.Fits) != 6 {
		t.Fatalf("%d bags, %d fits; want some bags and 2×3 fits", n, len(got.Fits))
	}
	for _, f := range got.Fits {
		want, err := folds.KFold(n, 3, 7, uint64(f.Repeat))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.Test, want[f.Fold]) {
			t.Errorf("repeat %d fold %d: test %v, want %v", f.Repeat, f.Fold, f.Test, want[f.Fold])
		}
		if !slices.Equal(f.Train, folds.Complement(n, f.Test)) {
			t.Errorf("repeat %d fold %d: train is not the complement of test", f.Repeat, f.Fold)
		}
	}
}

// TestEvalWorkersBoundGOMAXPROCS: --workers N runs the fits with the Go
// runtime bounded to N cores (GOMAXPROCS) and gives the process its
// setting back afterwards; without --workers (or with more workers than
// cores) the runtime is left alone. It catches a bound that is not set
// (the garbage collector then takes a spare core) and one that leaks past
// the command.
func TestEvalWorkersBoundGOMAXPROCS(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2")
	}
	path := writeData(t, 4)
	before := runtime.GOMAXPROCS(0)
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"--workers", "1"}, 1},
		{nil, before},
		{[]string{"--workers", fmt.Sprint(before + 3)}, before},
	}
	for _, tc := range tests {
		var mu sync.Mutex
		var seen []int
		kind := evaltest.Echo(nil, "")
		fit := kind.Fit
		kind.Fit = func(ctx context.Context, train *mil.Dataset, opt models.FitOptions) (models.Model, error) {
			mu.Lock()
			seen = append(seen, runtime.GOMAXPROCS(0))
			mu.Unlock()
			return fit(ctx, train, opt)
		}
		e, _, stderr := testEnv()
		e.registry = models.NewRegistry(kind)
		args := append([]string{"eval", "--data", path, "--model", "echo", "--folds", "2", "--json"}, tc.args...)
		if code := run(context.Background(), e, args); code != 0 {
			t.Fatalf("%q: exit %d, stderr %q", tc.args, code, stderr)
		}
		if len(seen) == 0 {
			t.Fatalf("%q: no fit ran", tc.args)
		}
		for _, p := range seen {
			if p != tc.want {
				t.Errorf("%q: a fit ran with GOMAXPROCS %d, want %d", tc.args, p, tc.want)
			}
		}
		if got := runtime.GOMAXPROCS(0); got != before {
			t.Errorf("%q: GOMAXPROCS %d after the command, want %d back", tc.args, got, before)
		}
	}
}
