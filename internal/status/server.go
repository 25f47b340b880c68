package status

import (
	_ "embed"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

// Handler serves the status page of a collector:
//
//	GET /                  the page (it polls /api/status and redraws)
//	GET /api/status        the latest Snapshot as JSON
//	GET /plots/NAME.svg    a plot (models, throughput, lag, dead-letters, refits)
//	GET /gallery/HEX.png   the picture of an annotated photo of the gallery
//	                       (HEX: its bag id in hex)
//	GET /metrics           lag and offsets per partition, in the Prometheus format
//	GET /healthz, /readyz  liveness, and readiness once a poll reached Redis and Kafka
//
// refresh is how often the page polls.
func Handler(c *Collector, refresh time.Duration, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if refresh <= 0 {
		refresh = 2 * time.Second
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&metrics{c: c})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err := pageTemplate.Execute(w, struct {
			RefreshMS int64
			Plots     []string
		}{refresh.Milliseconds(), plotNames})
		if err != nil {
			log.Warn("status page", "err", err)
		}
	})
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err := json.NewEncoder(w).Encode(c.Snapshot()); err != nil {
			log.Warn("status json", "err", err)
		}
	})
	mux.HandleFunc("GET /plots/{file}", func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutSuffix(r.PathValue("file"), ".svg")
		if !ok || !slices.Contains(plotNames, name) {
			http.NotFound(w, r)
			return
		}
		svg, err := renderPlot(name, c.Snapshot(), c.Samples())
		if err != nil {
			log.Warn("status plot", "plot", name, "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(svg)
	})
	mux.HandleFunc("GET /gallery/{file}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := bagOfPath(r.PathValue("file"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		png, err := c.gal.picture(id)
		if errors.Is(err, errNotKept) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			log.Warn("status gallery", "bag", id, "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		// The URL names the bag, its model version and its photo's hash.
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = w.Write(png)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.Ready() {
			http.Error(w, "not ready: registry and Kafka not read yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// metrics exports the collector's last poll. Offsets and lag are gauges
// read at scrape time, so a restart of mimlctl status loses nothing.
type metrics struct{ c *Collector }

var _ prometheus.Collector = (*metrics)(nil)

var (
	descEnd = prometheus.NewDesc("mimlstream_partition_end_offset",
		"Offset the next message of the partition will get (from the last poll).", []string{"topic", "partition"}, nil)
	descCommitted = prometheus.NewDesc("mimlstream_consumer_group_committed_offset",
		"Offset committed by the consumer group in the partition (-1: none).", []string{"group", "topic", "partition"}, nil)
	descLag = prometheus.NewDesc("mimlstream_consumer_group_lag_messages",
		"Messages of the partition at or after the consumer group's committed offset.", []string{"group", "topic", "partition"}, nil)
	descVersions = prometheus.NewDesc("mimlstream_registry_versions",
		"Model versions stored in the registry.", nil, nil)
	descSourceUp = prometheus.NewDesc("mimlstream_status_source_up",
		"1 when the last read of the source (registry, kafka, dead-letters, retrainer) succeeded.", []string{"source"}, nil)
	descDeadLetterLast = prometheus.NewDesc("mimlstream_dead_letter_last_timestamp_seconds",
		"Time of the newest message on the dead-letter topic.", nil, nil)
)

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEnd, descCommitted, descLag, descVersions, descSourceUp, descDeadLetterLast} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	s := m.c.Snapshot()
	if s.Seq == 0 {
		return // nothing polled yet: no made-up zeros
	}
	if s.Throughput != nil {
		for _, l := range s.Throughput.Lag {
			p := strconv.Itoa(l.Partition)
			ch <- prometheus.MustNewConstMetric(descEnd, prometheus.GaugeValue, float64(l.End), s.BagsTopic, p)
			ch <- prometheus.MustNewConstMetric(descCommitted, prometheus.GaugeValue, float64(l.Committed), s.Group, s.BagsTopic, p)
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(l.Lag), s.Group, s.BagsTopic, p)
		}
	}
	if _, failed := s.Errors["registry"]; !failed {
		ch <- prometheus.MustNewConstMetric(descVersions, prometheus.GaugeValue, float64(len(s.Models)))
	}
	for _, src := range m.c.sources() {
		up := 1.0
		if _, failed := s.Errors[src]; failed {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(descSourceUp, prometheus.GaugeValue, up, src)
	}
	if s.DeadLetters.Last != nil {
		ch <- prometheus.MustNewConstMetric(descDeadLetterLast, prometheus.GaugeValue, float64(s.DeadLetters.Last.UnixNano())/1e9)
	}
}
