# The README's two commands: `make demo` runs the main job, `make test` the tests.
GO ?= go

.PHONY: test vet bench soak demo demo-media build mutate chaos status-screenshot compare-misvm kafka
# The real-Kafka suite (internal/e2e TestRealKafka*, docs/kafka.md) needs
# java and mvn; without them it is skipped, said here in one line, and
# under CI=true it fails instead.
HAVE_JAVA := $(shell command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 && echo yes)

REAL_KAFKA := TestRealKafka|TestStartProduceRestart
test: vet
	$(GO) test -count=1 -timeout 80m -skip '$(REAL_KAFKA)' ./...
	@test -n "$(HAVE_JAVA)" || echo "real-Kafka suite skipped: java or mvn not found (with CI=true it fails instead)"
	@# verbose, so that the log names each real-Kafka test, its Kafka version and its counts
	$(GO) test -count=1 -timeout 40m -v -run '$(REAL_KAFKA)' ./internal/testsupport/kafkatest/ ./internal/e2e/

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@# the hand mutations of docs/mutations.txt must name lines that still hold their text
	@d=$$(mktemp -d) && MUTATE_OUT=$$d docs/mutate.sh check; rc=$$?; rm -rf "$$d"; exit $$rc

build:
	$(GO) build -o bin/ ./cmd/...

# One command, from a fresh clone: embedded broker, in-process Redis (or
# REDIS_URL), MSCV2 streamed with half its bags labeled, the retrainer and
# two annotators, with live progress and a summary.
demo:
	@echo "make demo: building the demo (the first build on a fresh clone takes a few minutes; later ones seconds)"
	$(GO) build -o bin/demo ./cmd/demo
	bin/demo

# The media demo: the MSRC v2 development photos (../shared/data/media/msrc_v2_dev; MEDIA=DIR for others) segmented, streamed, annotated region by region, a few drawn as PNGs (the summary says where), with the status page's gallery on 127.0.0.1:8091 until Ctrl-C.
MEDIA ?= ../shared/data/media/msrc_v2_dev
demo-media:
	@echo "make demo-media: building the demo (the first build on a fresh clone takes a few minutes)"
	$(GO) build -o bin/demo ./cmd/demo
	bin/demo --media --media-data $(MEDIA) --status-listen 127.0.0.1:8091

# End-to-end throughput on loopback next to its ceilings: the raw kafka-go
# produce rate of the same messages on the same broker and the annotate
# step alone (e2e/raw_produce, e2e/annotate); p50/p99 latency at half and
# a tenth of the end-to-end rate; one sub-benchmark per output compression
# (MIMLSTREAM_BENCH_CODECS=none,lz4,zstd to change) and, in each, per wire
# format of bags and annotations (MIMLSTREAM_BENCH_WIRES=json,protobuf).
# 20 copies of the 591 MSCV2 bags per rate, the saturating ones as one
# stream (and at least 200,000 raw messages): at 5 a rate was a tenth of a
# second of work, and one scheduling hiccup moved it by half.
# MIMLSTREAM_BENCH_CPUPROFILE=FILE (relative to internal/e2e) profiles the
# saturating stream alone.
# With java and mvn, the same run measures Apache Kafka beside the
# embedded broker (broker=kafka-VERSION sub-benchmarks; BENCH_KAFKA= to
# skip it, or another version).
BENCH_KAFKA ?= $(if $(HAVE_JAVA),4.4.0)
bench:
	MIMLSTREAM_BENCH_KAFKA=$(BENCH_KAFKA) $(GO) test -run '^$$' -bench BenchmarkPipeline -benchtime 20x -timeout 60m ./internal/e2e/

# One Apache Kafka node on 127.0.0.1:9092 in the foreground, from Maven
# Central's jars (deploy/kafka/run.sh says what it takes), to run the
# services against the real broker by hand. `make demo` keeps the embedded
# broker, which needs nothing installed.
kafka:
	deploy/kafka/run.sh

# ingest, an annotator and the retrainer as processes for 60 s at 80% of
# the maximum rate measured first (MIMLSTREAM_SOAK_DURATION=5m to change):
# nothing lost, the RSS of every service flat (samples logged). Not in
# `make test`.
soak:
	MIMLSTREAM_SOAK=1 $(GO) test -count=1 -run TestSoak -v -timeout 30m ./internal/e2e/

# The status page rendered in headless Chromium with real data, saved as the
# README's screenshot, and its gallery of annotated media close up.
status-screenshot:
	MIMLSTREAM_STATUS_SCREENSHOT=$(CURDIR)/docs/status-page.png MIMLSTREAM_STATUS_GALLERY_SCREENSHOT=$(CURDIR)/docs/status-gallery.png \
		$(GO) test -count=1 -run 'TestStatusPageInChromium|TestStatusGalleryInChromium' ./internal/status/

# Mutation testing of the core packages: gremlins (pinned in the script)
# and the hand mutations of docs/mutations.txt; how to read the output and
# the last results are in docs/mutation.md. About 40 minutes of CPU, so not
# in `make test` or CI. ROWS=orlr (or wire, featurestore, assign, measure)
# limits it to some packages.
mutate:
	docs/mutate.sh all $(ROWS)

# Ours beside misvm (Doran's Python MI-SVM package, fetched at a pinned
# commit and run beside the project, never copied into it) on the same folds:
# accuracy and CPU of MI-SVM and mi-SVM on Musk1, Elephant and Fox
# (docs/peers/misvm/compare.sh says what it needs). SETS=musk1 limits it,
# RUNS=N sets the runs per side (3). Not in `make test`: it needs Python's
# numpy, scipy, cvxopt and scikit-learn, and the network once.
compare-misvm:
	RUNS=$(or $(RUNS),3) docs/peers/misvm/compare.sh $(SETS)

# Annotators and the retrainer SIGKILLed at random for 3 minutes, and the
# broker restarted every minute (its data kept), while valid, invalid,
# oversize and poison bags flow (MIMLSTREAM_CHAOS_DURATION=5m to change): 0
# bag ids missing, every bad one dead-lettered, the registry consistent. Not in `make test` (it would take a tenth of CI's budget).
chaos:
	MIMLSTREAM_CHAOS=1 $(GO) test -count=1 -run TestChaos -v -timeout 20m ./internal/e2e/
