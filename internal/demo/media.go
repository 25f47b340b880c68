package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/eval"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/kafkaview"
	"github.com/mimlstream/mimlstream/internal/measure"
	"github.com/mimlstream/mimlstream/internal/media/imagefeat"
	"github.com/mimlstream/mimlstream/internal/media/photobag"
	"github.com/mimlstream/mimlstream/internal/media/photoeval"
	"github.com/mimlstream/mimlstream/internal/media/picture"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/status"
	"github.com/mimlstream/mimlstream/internal/stream/annotate"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/retrain"
	"github.com/mimlstream/mimlstream/internal/stream/service/redisflag"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// DevPhotos is where the media demo's photos are by default: the shared
// MSRC v2 development set beside the repository (its bags.jsonl manifest).
const DevPhotos = "../shared/data/media/msrc_v2_dev"

// mediaConfig holds the media demo's own settings.
type mediaConfig struct {
	photos, pictures, statusListen string
	drawn, limit                   int
}

// resolvePhotos returns the manifest of the photos: path itself when it is
// a file, its bags.jsonl when a folder; a relative path is taken relative
// to the repository (the folder of go.mod above the working directory),
// so the demo finds the shared data from anywhere in the clone.
func resolvePhotos(path string) (string, error) {
	if !filepath.IsAbs(path) {
		if root, err := repoRoot(); err == nil {
			path = filepath.Join(root, path)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("the photos to stream: %w (--media-data names a photo manifest or its folder)", err)
	}
	if st.IsDir() {
		path = filepath.Join(path, "bags.jsonl")
	}
	if !photobag.IsPhotoManifest(path) {
		return "", fmt.Errorf("%s is not a photo manifest (JSON lines naming an \"image\")", path)
	}
	return path, nil
}

// repoRoot is the nearest folder above the working directory holding
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// runMedia streams a manifest of photos end to end: the ingest segments
// and featurizes them (ingest --data), the retrainer fits on the labeled
// ones, the annotators label every region; the summary scores the regions
// against the manifest's ground truth when it has some, and a few
// annotated photos are drawn as PNGs.
func runMedia(ctx context.Context, kinds *models.Registry, stdout, stderr io.Writer, c config, mc mediaConfig) error {
	manifest, err := resolvePhotos(mc.photos)
	if err != nil {
		return cli.Usage(err)
	}
	lines, dir, err := photobag.ReadManifest(manifest)
	if err != nil {
		return err
	}
	if mc.limit > 0 && mc.limit < len(lines) {
		lines = lines[:mc.limit]
	}
	staged, err := stagePhotos(lines, dir, c.rounds)
	if err != nil {
		return err
	}
	defer os.RemoveAll(staged.root)
	inf, stopInfra, err := c.start(ctx, stdout, stderr, "demo-media")
	if err != nil {
		return err
	}
	defer stopInfra()
	env, kc, tel, topics, sec, rc := inf.env, inf.kc, inf.tel, inf.kc.Topics, inf.sec, inf.rc

	rt, err := c.retrainer(ctx, kinds, inf, c.params)
	if err != nil {
		return err
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "retrainer %s %v on the photos' region features, refit every %d labeled photos (first at %d)\n", c.kind, rt.Params(), c.every, c.minBags)
	anns, closeAnns, err := c.startAnnotators(ctx, kinds, inf, nil)
	if err != nil {
		return err
	}
	defer closeAnns()
	fmt.Fprintf(stdout, "annotators %d in consumer group demo-annotators\n", c.annotators)

	icfg := ingest.DefaultConfig()
	icfg.Kafka, icfg.Telemetry = kc, tel
	icfg.LabelFraction, icfg.Data, icfg.Progress = c.labelFraction, staged.stream, false
	// The ingest prints its own summary line; the demo's comes after.
	in, err := ingest.New(ctx, env, icfg)
	if err != nil {
		return err
	}
	defer in.Close()

	prog := &mediaProgress{seen: map[string]*wire.AnnotationMessage{}, versions: map[string]int{}}
	g, gctx, stopServices := inf.runServices(ctx, rt, anns, prog)
	defer stopServices()
	statusURL := ""
	if mc.statusListen != "" {
		if statusURL, err = serveStatus(gctx, g, mc.statusListen, kc.Brokers, sec, rc, topics, staged.root); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "status   %s (the gallery shows the latest annotated photos)\n", statusURL)
	}
	total := len(lines) * max(c.rounds, 1)
	fmt.Fprintf(stdout, "ingest   %s: %d photos, streamed %d times (later rounds as new bag ids), %.0f%% labeled\n\n",
		manifest, len(lines), max(c.rounds, 1), 100*c.labelFraction)
	start := time.Now()
	ingested := make(chan struct{})
	g.Go(func() error {
		if err := in.Run(gctx); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		close(ingested)
		return nil
	})
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ingestDone, finished := false, false
	for !finished && gctx.Err() == nil {
		select {
		case <-ingested:
			ingestDone, ingested = true, nil
		case <-tick.C:
			prog.printLine(stdout, time.Since(start), total, anns)
			finished = ingestDone && prog.done(total)
		case <-gctx.Done():
		}
	}
	elapsed := time.Since(start)
	if !finished {
		stopServices()
		werr := g.Wait()
		if ctx.Err() != nil {
			return fmt.Errorf("demo did not finish: %w", ctx.Err())
		}
		return werr
	}
	st := in.Publisher().Stats()
	prog.summary(ctx, stdout, elapsed, st, staged.truth, rt.Retrainer().Results())
	if err := prog.draw(stdout, staged.root, mc.pictures, mc.drawn); err != nil {
		stopServices()
		_ = g.Wait()
		return err
	}
	if statusURL != "" {
		fmt.Fprintf(stdout, "\nstatus page with the gallery at %s until Ctrl-C (or --timeout)\n", statusURL)
		<-ctx.Done()
	}
	stopServices()
	return g.Wait()
}

// staged is the manifests the media demo streams and scores by, in a
// folder of their own: stream lists the photos rounds times (later rounds
// under new ids "rN/ID"), truth once with their ground truth; both name
// the photos through a link to their folder ("photos/..."), which is
// also the root the pictures and the status page read them from.
type staged struct {
	root, stream, truth string
}

// stagedPhotos is the link to the photos' folder in a staged root.
const stagedPhotos = "photos"

func stagePhotos(lines []photobag.Line, dir string, rounds int) (staged, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return staged{}, err
	}
	root, err := os.MkdirTemp("", "mimlstream-demo-media-")
	if err != nil {
		return staged{}, err
	}
	s := staged{root: root, stream: filepath.Join(root, "stream.jsonl"), truth: filepath.Join(root, "truth.jsonl")}
	if err := os.Symlink(abs, filepath.Join(root, stagedPhotos)); err != nil {
		os.RemoveAll(root)
		return staged{}, err
	}
	// The vocabulary beside the manifest (photobag.Classes) comes along.
	if _, err := os.Stat(filepath.Join(abs, "classes.json")); err == nil {
		if err := os.Symlink(filepath.Join(abs, "classes.json"), filepath.Join(root, "classes.json")); err != nil {
			os.RemoveAll(root)
			return staged{}, err
		}
	}
	var stream, truth []byte
	for r := range max(rounds, 1) {
		for _, l := range lines {
			l.Image = stagedPhotos + "/" + l.Image
			if l.GTMask != "" {
				l.GTMask = stagedPhotos + "/" + l.GTMask
			}
			if r > 0 {
				l.ID = fmt.Sprintf("r%d/%s", r+1, l.ID)
			}
			b, err := json.Marshal(l)
			if err != nil {
				os.RemoveAll(root)
				return staged{}, err
			}
			stream = append(append(stream, b...), '\n')
			if r == 0 {
				truth = append(append(truth, b...), '\n')
			}
		}
	}
	if err := errors.Join(os.WriteFile(s.stream, stream, 0o644), os.WriteFile(s.truth, truth, 0o644)); err != nil {
		os.RemoveAll(root)
		return staged{}, err
	}
	return s, nil
}

// versionOrder compares display versions as the registry numbers them
// (v2 before v10).
func versionOrder(a, b string) int {
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return cmp.Compare(a, b)
}

// originalID is the id of a photo before its replay ("r2/ID" is ID).
func originalID(id string) string {
	if rest, ok := strings.CutPrefix(id, "r"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 && strings.Trim(rest[:i], "0123456789") == "" {
			return rest[i+1:]
		}
	}
	return id
}

// serveStatus serves the status page (mimlctl status's) on listen for as
// long as ctx, its gallery reading the photos under mediaRoot.
func serveStatus(ctx context.Context, g *errgroup.Group, listen string, brokers []string, sec kafkasec.Conn, rc redisflag.Config, topics wire.Topics, mediaRoot string) (string, error) {
	o, err := rc.Options()
	if err != nil {
		return "", err
	}
	rdb, err := redisflag.Dial(ctx, o)
	if err != nil {
		return "", err
	}
	c, err := status.NewCollector(status.Config{Registry: featurestore.NewRegistry(rdb, rc.RegistryPrefix), Kafka: kafkaview.New(brokers, sec),
		Topics: topics, Group: "demo-annotators", MediaRoot: mediaRoot})
	if err != nil {
		rdb.Close()
		return "", err
	}
	srv, err := httpguard.Listen(httpguard.ServerConfig{Addr: listen, Handler: status.Handler(c, 0, nil)})
	if err != nil {
		rdb.Close()
		return "", err
	}
	g.Go(func() error { return c.Run(ctx) })
	g.Go(func() error {
		defer rdb.Close()
		return srv.Serve(ctx)
	})
	return "http://" + srv.Addr().String(), nil
}

// mediaProgress follows the annotations of the photos.
type mediaProgress struct {
	mu        sync.Mutex
	seen      map[string]*wire.AnnotationMessage
	dups      int
	dead      int
	versions  map[string]int
	lastCount int
	lastAt    time.Duration
}

func (p *mediaProgress) addAnnotation(m kafka.Message) error {
	var a wire.AnnotationMessage
	if err := json.Unmarshal(m.Value, &a); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[a.BagID] != nil {
		p.dups++
		return nil
	}
	p.seen[a.BagID] = &a
	p.versions[a.ModelVersion]++
	return nil
}

func (p *mediaProgress) addDead() {
	p.mu.Lock()
	p.dead++
	p.mu.Unlock()
}

func (p *mediaProgress) done(total int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)+p.dead >= total
}

func (p *mediaProgress) versionList() string {
	return (&progress{versions: p.versions}).versionList()
}

func (p *mediaProgress) printLine(w io.Writer, elapsed time.Duration, total int, anns []*annotate.Service) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.seen)
	rate := float64(n-p.lastCount) / (elapsed - p.lastAt).Seconds()
	p.lastCount, p.lastAt = n, elapsed
	serving := make([]string, len(anns))
	for i, a := range anns {
		serving[i] = a.Annotator().ModelVersion()
		if serving[i] == "" {
			serving[i] = "-"
		}
	}
	fmt.Fprintf(w, "%5.0fs  annotated %4d/%d photos  %5.1f photos/s  dead %d  serving [%s]  by version {%s}\n",
		elapsed.Seconds(), n, total, rate, p.dead, strings.Join(serving, " "), p.versionList())
}

// summary prints the counts, and the region accuracy by pixel vote
// against the manifest's ground-truth masks (photoeval's measure, as
// retrainer eval reports it) per mode when the manifest has them.
func (p *mediaProgress) summary(ctx context.Context, w io.Writer, elapsed time.Duration, st ingest.IngestStats, manifest string, refits []retrain.RefitResult) {
	p.mu.Lock()
	seen := maps.Clone(p.seen)
	dups, dead, versions := p.dups, p.dead, p.versionList()
	p.mu.Unlock() // not held while the truth is built: the tails go on
	regions := 0
	for _, a := range seen {
		regions += len(a.Regions)
	}
	fmt.Fprintf(w, "\nsummary after %v\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  ingested   %d photos (%d labeled, sent to training too)\n", st.Published, st.Labeled)
	fmt.Fprintf(w, "  annotated  %d distinct photos, %d regions (%.1f a photo; %d redelivered duplicates dropped by id), %d dead letters\n",
		len(seen), regions, float64(regions)/float64(max(len(seen), 1)), dups, dead)
	fmt.Fprintf(w, "  photos per model version: %s\n", versions)
	for _, r := range refits {
		promoted := "kept current"
		if r.Promoted {
			promoted = "promoted"
		}
		fmt.Fprintf(w, "  refit %-4s on %3d photos (held out %3d) in %6.2fs: %s (%s)\n", r.Version, r.TrainBags, r.HeldOutBags, r.FitTime.Seconds(), promoted, r.Reason)
	}
	f, err := imagefeat.New(imagefeat.DefaultParams())
	if err != nil {
		fmt.Fprintf(w, "  region accuracy: %v\n", err)
		return
	}
	truth, err := photoeval.Build(ctx, manifest, photoeval.Options{Featurizer: f})
	if err != nil {
		fmt.Fprintf(w, "  region accuracy: not measured (%v)\n", err)
		return
	}
	for _, mode := range []string{string(models.Inductive), string(models.Transductive)} {
		var bags []*mil.Bag
		var preds []measure.Prediction
		for _, id := range slices.Sorted(maps.Keys(seen)) {
			a := seen[id]
			if a.Mode != mode {
				continue
			}
			bags = append(bags, &mil.Bag{ID: originalID(id)})
			preds = append(preds, measure.Prediction{InstanceLabels: a.InstanceLabels, BagLabels: a.BagLabels})
		}
		if len(bags) == 0 {
			continue
		}
		s, err := truth.Score(bags, preds)
		if err != nil {
			fmt.Fprintf(w, "  region accuracy %s: not measured (%v)\n", mode, err)
			continue
		}
		fmt.Fprintf(w, "  region accuracy %-12s %.3f, pixel accuracy %.3f, over %d photos (ground-truth regions by pixel vote)\n",
			mode, s[measure.InstanceAccuracy], s[eval.PixelAccuracy], len(bags))
	}
}

// draw writes up to n annotated photos (by bag id order) as PNGs into
// out, as mimlctl picture draws them, and says where they are.
func (p *mediaProgress) draw(w io.Writer, dir, out string, n int) error {
	if n <= 0 {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// One picture a photo: its annotation by the latest model version
	// (the latest annotation among those), photos in id order.
	latest := map[string]string{}
	p.mu.Lock()
	for id, a := range p.seen {
		o := originalID(id)
		cur, ok := latest[o]
		if !ok {
			latest[o] = id
			continue
		}
		if c := versionOrder(a.ModelVersion, p.seen[cur].ModelVersion); c > 0 || (c == 0 && a.AnnotatedAt.After(p.seen[cur].AnnotatedAt)) {
			latest[o] = id
		}
	}
	p.mu.Unlock()
	var ids []string
	for _, o := range slices.Sorted(maps.Keys(latest)) {
		ids = append(ids, latest[o])
	}
	fmt.Fprintf(w, "\nannotated pictures in %s:\n", out)
	for _, id := range ids[:min(n, len(ids))] {
		p.mu.Lock()
		a := p.seen[id]
		p.mu.Unlock()
		if a.Media == nil || !filepath.IsLocal(filepath.FromSlash(a.Media.URI)) {
			return fmt.Errorf("bag %s: the annotation names no photo under %s", id, dir)
		}
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(a.Media.URI)))
		if err != nil {
			return err
		}
		img, err := picture.FromAnnotation(a, raw)
		if err != nil {
			return err
		}
		path := filepath.Join(out, strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(id)+".png")
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := png.Encode(f, img); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s  (%s %s, %s)\n", path, a.Model, a.ModelVersion, a.Mode)
	}
	fmt.Fprintf(w, "(mimlctl picture --annotation FILE --image PHOTO --out PNG draws any other, from a line of 'mimlctl tail annotations --json')\n")
	return nil
}
