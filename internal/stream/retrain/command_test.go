package retrain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/mil"
	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/signing"
	"github.com/mimlstream/mimlstream/internal/stream/ingest"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
	"github.com/mimlstream/mimlstream/internal/testsupport/streamtest"
	"github.com/mimlstream/mimlstream/internal/testsupport/syncbuf"
)

func startBroker(t *testing.T) []string {
	return streamtest.StartBroker(t, 2, wire.DefaultTopics().All()...)
}

func TestRunFitPublishesAndPromotes(t *testing.T) {
	addr, rdb, _ := streamtest.StartRedis(t)
	var stdout, stderr bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	kinds := models.NewRegistry(streamtest.CentroidKind())
	args := []string{"--redis", addr, "--registry-prefix", "fit", "--data", "../../../testdata/mscv2/MSCV2.mat", "--model", streamtest.KindName,
		"--param", "iters=2", "--promote"}
	if err := FitCommand(context.Background(), env, kinds, args); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var got struct {
		Version  string `json:"version"`
		Kind     string `json:"kind"`
		Dim      int    `json:"dim"`
		Promoted bool   `json:"promoted"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if got.Version != "v1" || got.Kind != streamtest.KindName || got.Dim != 48 || !got.Promoted {
		t.Errorf("fit output %+v", got)
	}
	blob, meta, err := featurestore.NewRegistry(rdb, "fit").Current(context.Background())
	if err != nil || meta.Version != "v1" {
		t.Fatalf("current %s, %v", meta.Version, err)
	}
	m, err := kinds.Decode(blob)
	if err != nil || m.Meta().Params["iters"] != "2" {
		t.Fatalf("stored model %v, %v", m, err)
	}
	if err := FitCommand(context.Background(), env, kinds, []string{"--redis", addr, "--data", "x.mat", "--model", "nope"}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("unknown kind: %v, want a usage error", err)
	}
}

// TestRunRetrainerServe runs the retrainer service on a stream of labeled
// bags until it has promoted a model, then stops it. Two stale versions
// stored beforehand are pruned (--keep-versions, set here through its
// environment variable).
func TestRunRetrainerServe(t *testing.T) {
	t.Setenv(cli.EnvName("retrainer-serve", "keep-versions"), "1")
	brokers := startBroker(t)
	addr, rdb, _ := streamtest.StartRedis(t)
	reg := featurestore.NewRegistry(rdb, "serve")
	stale := &mil.Dataset{Classes: []string{"a", "b"}, Dim: 2, Bags: []mil.Bag{
		{ID: "s0", Instances: [][]float64{{0, 0.5}}, Labels: []int{0}}, {ID: "s1", Instances: [][]float64{{5, 0.5}}, Labels: []int{1}}}}
	m, err := streamtest.CentroidKind().Fit(context.Background(), stale, models.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := models.Encode(m)
	for range 2 {
		if _, err := reg.Put(context.Background(), blob, featurestore.VersionMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr syncbuf.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	kinds := models.NewRegistry(streamtest.CentroidKind())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	go func() {
		done <- ServeCommand(ctx, env, kinds, []string{"--brokers", strings.Join(brokers, ","), "--redis", addr, "--registry-prefix", "serve",
			"--model", streamtest.KindName, "--every", "20", "--min-bags", "20", "--listen", listen, "--param", "iters=5"})
	}()
	// Two slices of 20 bags, the second after the first model: whether
	// the retrainer reads the first slice live or rebuilds its window from
	// it, it refits once on it, then once on the second.
	ingestSlice := func(from int) {
		var stdin bytes.Buffer
		for i := from; i < from+20; i++ {
			fmt.Fprintf(&stdin, `{"schema_version":1,"id":"t%d","dim":2,"instances":[[%d,0.5]],"labels":[%d],"classes":["a","b"]}`+"\n", i, i%2*5, i%2)
		}
		ienv := service.Env{Stdin: &stdin, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
		if err := ingest.Command(context.Background(), ienv, []string{"--brokers", strings.Join(brokers, ","), "--jsonl", "-"}); err != nil {
			t.Fatal(err)
		}
	}
	var meta featurestore.VersionMeta
	waitFor := func(version string) {
		streamtest.WaitExplained(t, 20*time.Second, 50*time.Millisecond, func() bool {
			_, meta, err = reg.Current(t.Context())
			return err == nil && meta.Version == version
		}, func() string { return fmt.Sprintf("%s not promoted: %v\n%s", version, err, stderr.String()) })
	}
	ingestSlice(0)
	waitFor("v3")
	ingestSlice(20)
	waitFor("v4")
	// Readiness: a retrainer that follows its topic with a rebuilt window
	// says so (the fault: no /readyz, so Kubernetes cannot tell).
	resp, err := http.Get("http://" + listen + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "ok: following bags-train") {
		t.Errorf("/readyz = %d %q, want 200 ok: following bags-train", resp.StatusCode, body)
	}
	// The toy classes are separable: the held-out loss is zero.
	if loss, ok := meta.Metrics["heldout_hamming_loss"]; meta.Kind != streamtest.KindName || meta.Parent != "v3" || !ok || loss != 0 {
		t.Errorf("promoted %+v", meta)
	}
	// The first promotion (v3) pruned the stale v1 and v2; the second kept
	// v3, now previous.
	vs, err := reg.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Version != "v3" || vs[1].Version != "v4" {
		t.Errorf("registry holds %+v, want v3 and v4", vs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestFitConfigCheck: parameters are checked against the kind's declared
// specs before anything connects, so a misspelt key or an orlr-only flag
// given to another kind is a usage error (exit 2) naming the valid keys,
// not a silently ignored setting.
func TestFitConfigCheck(t *testing.T) {
	kinds := models.NewRegistry(streamtest.CentroidKind())
	cases := []struct {
		name string
		cfg  FitConfig
		want string // empty: accepted
	}{
		{"declared key", FitConfig{Kind: streamtest.KindName, Params: cli.StringList{"iters=3"}}, ""},
		{"misspelt key", FitConfig{Kind: streamtest.KindName, Params: cli.StringList{"itres=3"}}, "valid:"},
		{"bad value type", FitConfig{Kind: streamtest.KindName, Params: cli.StringList{"iters=three"}}, "iters"},
		{"--subset on a kind without subsets", FitConfig{Kind: streamtest.KindName, Subset: 0.5}, "subset"},
		{"malformed pair", FitConfig{Kind: streamtest.KindName, Params: cli.StringList{"iters"}}, "key=value"},
		{"unknown kind", FitConfig{Kind: "nope"}, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.cfg.check(kinds)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if code := cli.ExitCode("retrainer", io.Discard, err); code != 2 {
				t.Fatalf("exit code %d, want 2 (usage)", code)
			}
		})
	}
}

// TestRunFitSigns: fit --signing-key stores a signed version that a
// registry with the public key serves, and one with another key refuses;
// an unreadable key is a usage error, before anything is fitted.
func TestRunFitSigns(t *testing.T) {
	addr, rdb, _ := streamtest.StartRedis(t)
	dir := t.TempDir()
	privPEM, pubPEM, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	_, otherPEM, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	privFile, pubFile, otherFile := filepath.Join(dir, "priv.pem"), filepath.Join(dir, "pub.pem"), filepath.Join(dir, "other.pem")
	for f, b := range map[string][]byte{privFile: privPEM, pubFile: pubPEM, otherFile: otherPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	env := service.Env{Stdout: &stdout, Stderr: &stderr}
	kinds := models.NewRegistry(streamtest.CentroidKind())
	args := []string{"--redis", addr, "--registry-prefix", "signed", "--data", "../../../testdata/mscv2/MSCV2.mat", "--model", streamtest.KindName,
		"--param", "iters=2", "--promote", "--signing-key", privFile}
	if err := FitCommand(context.Background(), env, kinds, args); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	pub, err := signing.LoadPublicKey(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	other, err := signing.LoadPublicKey(otherFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, meta, err := featurestore.NewRegistry(rdb, "signed", featurestore.WithVerifyKey(pub)).Current(context.Background()); err != nil || meta.Signature == "" {
		t.Fatalf("current with the right key: %v (signature %q)", err, meta.Signature)
	}
	if _, _, err := featurestore.NewRegistry(rdb, "signed", featurestore.WithVerifyKey(other)).Current(context.Background()); !errors.Is(err, featurestore.ErrBadSignature) {
		t.Fatalf("current with another key: %v, want ErrBadSignature", err)
	}
	bad := append(args[:len(args)-1:len(args)-1], filepath.Join(dir, "missing.pem"))
	if err := FitCommand(context.Background(), env, kinds, bad); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("missing signing key: %v, want a usage error", err)
	}
	// A public key where the private one belongs.
	bad = append(args[:len(args)-1:len(args)-1], pubFile)
	if err := FitCommand(context.Background(), env, kinds, bad); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("public key as signing key: %v, want a usage error", err)
	}
}
