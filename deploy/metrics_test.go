package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/redis/go-redis/v9"

	"github.com/mimlstream/mimlstream/internal/testsupport/redistest"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
)

// The dashboard and the alert rules name metrics; these tests check each
// name against what the services really export, scraped from the real
// commands run as processes (the same binaries TestManifests reads the
// flags of), and parse the rules with Prometheus's own rule parser.

const (
	dashboardFile = "grafana/mimlstream-dashboard.json"
	rulesFile     = "prometheus/alerts.yml"
	// proposedMark starts the description of a dashboard panel, and
	// proposedLabel marks an alert rule, whose metrics are proposed but
	// not exported yet.
	proposedMark  = "PROPOSED METRIC"
	proposedLabel = "metric_status"
)

// proposed are the metric names proposed for live quality per model
// version. A panel or rule marked proposed may use only these; once one is
// exported, TestDashboardAndRulesUseExportedMetrics asks for its mark to go.
var proposed = []string{} // none now: the live quality metrics are exported

// promQL is the parser of the expressions.
func promQL() parser.Parser { return parser.NewParser(parser.Options{}) }

// grafanaVars replaces Grafana's variables by values PromQL accepts.
var grafanaVars = regexp.MustCompile(`\$(__rate_interval|__interval|__range)\b|\$\{?[A-Za-z_]\w*\}?`)

func substituteGrafana(expr string) string {
	return grafanaVars.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.HasPrefix(v, "$__") {
			return "5m"
		}
		return "x"
	})
}

// metricNames returns the metric names an expression selects.
func metricNames(expr string) ([]string, error) {
	e, err := promQL().ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			if name == "" {
				for _, m := range vs.LabelMatchers {
					if m.Name == model.MetricNameLabel {
						name = m.Value
					}
				}
			}
			names = append(names, name)
		}
		return nil
	})
	return names, nil
}

// use is one expression of the dashboard or the rules.
type use struct {
	where    string
	expr     string
	proposed bool
}

// dashboardExprs returns every query of the dashboard, rows' panels
// included, with Grafana's variables substituted.
func dashboardExprs(t *testing.T) []use {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		ID          int     `json:"id"`
		Title       string  `json:"title"`
		Type        string  `json:"type"`
		Description string  `json:"description"`
		Panels      []panel `json:"panels"`
		Targets     []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		UID    string  `json:"uid"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" {
		t.Errorf("%s: no uid", dashboardFile)
	}
	var out []use
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("%s: panel id %d used twice", dashboardFile, p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
			}
			for _, tg := range p.Targets {
				out = append(out, use{where: fmt.Sprintf("dashboard panel %q", p.Title), expr: substituteGrafana(tg.Expr),
					proposed: strings.HasPrefix(p.Description, proposedMark)})
			}
		}
	}
	walk(d.Panels)
	return out
}

// ruleExprs parses the rules file with Prometheus's rule parser (as
// promtool check rules does) and returns every rule's expression.
func ruleExprs(t *testing.T) []use {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, promQL(), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("rulefmt: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	var out []use
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if r.Alert != "" {
				if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
					t.Errorf("%s: alert %s: needs a severity label and a summary annotation", rulesFile, name)
				}
			}
			out = append(out, use{where: fmt.Sprintf("rule %s (group %s)", name, g.Name), expr: r.Expr,
				proposed: r.Labels[proposedLabel] == "proposed"})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", rulesFile)
	}
	return out
}

// TestAlertRulesParse checks the rules and the dashboard's queries with
// Prometheus's parsers alone (no services needed).
func TestAlertRulesParse(t *testing.T) {
	for _, u := range append(ruleExprs(t), dashboardExprs(t)...) {
		names, err := metricNames(u.expr)
		if err != nil {
			t.Errorf("%s: %v\n%s", u.where, err, u.expr)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: selects no metric", u.where)
		}
	}
	// The checks can fail: a broken rule is refused.
	bad := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(bad, []byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: sum(rate(x[5m])\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs := rulefmt.ParseFile(bad, false, model.UTF8Validation, promQL(), slog.New(slog.DiscardHandler)); len(errs) == 0 {
		t.Error("rulefmt accepted an unbalanced expression")
	}
}

// TestDashboardAndRulesUseExportedMetrics runs the pipeline's commands as
// processes (mimlctl broker, retrainer fit and serve, an annotator,
// mimlctl status, ingest of MSCV2 and of musk1 bags of the wrong
// dimension), scrapes each /metrics, and checks every metric named by the
// dashboard and the alert rules against the exported names.
func TestDashboardAndRulesUseExportedMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the commands; skipped with -short")
	}
	redisAddr := redistest.Real(t)
	bin, _ := buildCommands(t)
	exported := scrapePipeline(t, bin, redisAddr)

	uses := append(dashboardExprs(t), ruleExprs(t)...)
	checked := 0
	for _, u := range uses {
		names, err := metricNames(u.expr)
		if err != nil {
			t.Errorf("%s: %v", u.where, err)
			continue
		}
		for _, n := range names {
			checked++
			switch {
			case u.proposed && exported[n]:
				t.Errorf("%s: %s is exported now: drop the proposed mark", u.where, n)
			case u.proposed && !slices.Contains(proposed, n):
				t.Errorf("%s: %s is neither exported nor a proposed metric", u.where, n)
			case !u.proposed && !exported[n]:
				t.Errorf("%s: no service exports %s", u.where, n)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d metric names checked", checked)
	}
	if t.Failed() {
		t.Logf("exported: %v", slices.Sorted(maps.Keys(exported)))
	}
}

// process is a command of the pipeline running in the background.
type process struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{}
}

func start(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(filepath.Join(bin, args[0]), args[1:]...), out: &syncbuf.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %v ---\n%s", args, p.out)
		}
	})
	return p
}

// stop interrupts the process and waits for it to exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit within 20s of SIGINT", p.cmd.Path)
	}
}

// runOnce runs a command to its end and fails the test if it fails.
func runOnce(t *testing.T, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, args[0]), args[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scrapePipeline runs the pipeline until every service has exported the
// metrics it exports only once something happened (a dead letter, a
// refit, a poll), and returns the names of every series scraped.
func scrapePipeline(t *testing.T, bin, redisAddr string) map[string]bool {
	t.Helper()
	broker := start(t, bin, "mimlctl", "broker", "--port", "0", "--partitions", "2")
	var brokers string
	re := regexp.MustCompile(`broker listening on (\S+) `)
	streamtest.WaitEvery(t, 15*time.Second, 100*time.Millisecond, "the broker to listen", func() bool {
		m := re.FindStringSubmatch(broker.out.String())
		if m != nil {
			brokers = m[1]
		}
		return m != nil
	})
	prefix := fmt.Sprintf("deploy-metrics-%d", time.Now().UnixNano())
	t.Cleanup(func() { deleteKeys(t, redisAddr, "{"+prefix+"*") })
	redis := []string{"--redis", redisAddr, "--registry-prefix", prefix}
	kafka := []string{"--brokers", brokers, "--create-topics=false"}
	mscv2 := filepath.Join("..", "testdata", "mscv2", "MSCV2.mat")
	musk1 := filepath.Join("..", "testdata", "musk1", "musk1.data")

	runOnce(t, bin, append([]string{"retrainer", "fit", "--data", mscv2, "--model", "dummy", "--promote"}, redis...)...)
	retrainer, annotator, status := freePort(t), freePort(t), freePort(t)
	retrainerProc := start(t, bin, slices.Concat([]string{"retrainer", "serve", "--model", "dummy", "--every", "40", "--min-bags", "20", "--listen", retrainer}, kafka, redis)...)
	start(t, bin, slices.Concat([]string{"annotator", "--name", "a1", "--listen", annotator, "--no-feature-cache", "--poll", "500ms", "--quality-interval", "200ms"}, kafka, redis)...)
	start(t, bin, slices.Concat([]string{"mimlctl", "status", "--listen", status, "--retrainer", "http://" + retrainer, "--interval", "200ms"}, kafka, redis)...)
	ingest := freePort(t)
	start(t, bin, slices.Concat([]string{"ingest", "--listen", ingest}, kafka)...)
	// Instance labels travel as audit labels, for the live instance accuracy.
	labeled := slices.Concat([]string{"ingest", "--data", mscv2, "--label-fraction", "0.5", "--with-instance-labels", "--progress=false"}, kafka)
	runOnce(t, bin, labeled...)
	runOnce(t, bin, slices.Concat([]string{"ingest", "--data", musk1, "--label-fraction", "0", "--limit", "5", "--progress=false"}, kafka)...)

	exported := map[string]bool{}
	waitFor := func(addr string, want ...string) {
		t.Helper()
		streamtest.WaitEvery(t, 90*time.Second, 100*time.Millisecond, fmt.Sprintf("%v on http://%s/metrics", want, addr), func() bool {
			names := scrape(addr)
			for _, w := range want {
				if !names[w] {
					return false
				}
			}
			maps.Copy(exported, names)
			return true
		})
	}
	waitFor(retrainer, "mimlstream_retrainer_refits_total", "mimlstream_retrainer_heldout_hamming_loss")
	waitFor(status, "mimlstream_consumer_group_lag_messages", "mimlstream_dead_letter_last_timestamp_seconds")

	// The live gauges show the rolling window of the version that is
	// current when they are read (and previous's whole record). The
	// retrainer promotes every 40 labeled bags, and may promote twice
	// more after the annotator has scored the last bag, so it is stopped,
	// the annotator waited for until it serves the final current version,
	// and labeled bags sent again for that version to score.
	retrainerProc.stop(t)
	current := currentVersion(t, bin, redis)
	streamtest.WaitEvery(t, 30*time.Second, 100*time.Millisecond, "the annotator to serve "+current, func() bool {
		return strings.Contains(scrapeText(annotator), `version="`+current+`"`)
	})
	runOnce(t, bin, slices.Concat(labeled, []string{"--limit", "60"})...)
	waitFor(annotator, "mimlstream_annotator_bags_total", "mimlstream_annotator_dead_letters_total", "mimlstream_annotator_model_info",
		"mimlstream_annotator_live_hamming_loss", "mimlstream_annotator_live_instance_accuracy", "mimlstream_annotator_live_scored_total")
	waitFor(ingest, "mimlstream_ingest_published_total", "mimlstream_ingest_rejected_total")
	return exported
}

// currentVersion asks mimlctl for the registry's current version.
func currentVersion(t *testing.T, bin string, redis []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "mimlctl"), slices.Concat([]string{"models", "show", "current", "--json"}, redis)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mimlctl models show current: %v\n%s", err, out)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Version == "" {
		t.Fatalf("mimlctl models show current --json: %v\n%s", err, out)
	}
	return v.Version
}

// scrapeText returns a /metrics page ("" when it cannot be read).
func scrapeText(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

// scrape returns the names of the series on a /metrics page (nil when it
// cannot be read).
func scrape(addr string) map[string]bool {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// deleteKeys removes the test's keys from the shared Redis.
func deleteKeys(t *testing.T, redisAddr, pattern string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	streamtest.DeleteKeys(ctx, rdb, pattern)
}
