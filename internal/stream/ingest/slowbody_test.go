package ingest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSlowBodiesCannotTakeEverySlot is the adversary's run: with
// --max-concurrent 8 and the command's 2-minute read timeout, eight
// authenticated clients send a body at a few bytes a second. They must not
// hold the eight slots until the read timeout: past the grace of the
// minimum body rate each is cut off (its answer 400, its connection
// closed), and a ninth client's POST goes through within seconds instead of
// getting 503 for two minutes.
func TestSlowBodiesCannotTakeEverySlot(t *testing.T) {
	brokers := startBroker(t)
	pub := newPublisher(t, brokers, 1<<20)
	cfg := DefaultConfig()
	hc := HTTPConfig{Tokens: loadTokens(t, "tok\n"), MaxLineBytes: 1 << 20, Batch: 16, MaxConcurrent: 8}
	hc.MinBodyRate, hc.MinBodyRateGrace = cfg.MinBodyRate, 2*time.Second
	addr := serve(t, pub, hc, cfg.Timeouts, "", "")
	start := time.Now()
	const slow = 8
	var wg sync.WaitGroup
	cut := make(chan string, slow)
	for i := range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "POST /bags HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		wg.Go(func() { // 10 bytes a second
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
				select {
				case <-tick.C:
				case <-stop:
					return
				}
			}
		})
		wg.Go(func() {
			defer close(stop)
			b, _ := io.ReadAll(c)
			first, _, _ := strings.Cut(string(b), "\r\n")
			cut <- fmt.Sprintf("client %d: %s after %v", i, first, time.Since(start).Round(100*time.Millisecond))
		})
	}
	time.Sleep(500 * time.Millisecond) // the eight hold every slot
	client := &http.Client{Timeout: 10 * time.Second}
	url := "http://" + addr + "/bags"
	var first503, through time.Duration
	refused := 0
	for time.Since(start) < 30*time.Second {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"schema_version":1,"id":"ok","dim":2,"instances":[[1,2]]}`+"\n"))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			through = time.Since(start)
			break
		}
		if resp.StatusCode == http.StatusServiceUnavailable && refused == 0 {
			first503 = time.Since(start)
		}
		refused++
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("8 slow bodies at 10 B/s, --max-concurrent 8, --read-timeout %v: another client refused %d times (first 503 at %v), through after %v",
		cfg.Timeouts.Read, refused, first503.Round(100*time.Millisecond), through.Round(100*time.Millisecond))
	if through == 0 || through > 10*time.Second {
		t.Errorf("another client got through after %v (0: not within 30 s); want within seconds", through)
	}
	for range slow {
		select {
		case s := <-cut:
			t.Log(s)
			if !strings.Contains(s, "400") {
				t.Errorf("slow body answered %s, want 400", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a slow body still holds its connection")
		}
	}
	wg.Wait()
}
