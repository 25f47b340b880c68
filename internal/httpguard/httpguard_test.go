package httpguard

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func tokenFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRequireBearer(t *testing.T) {
	toks, err := LoadTokens(tokenFile(t, "# ingest clients\nalpha-token\n\n  beta-token  \n"))
	if err != nil {
		t.Fatal(err)
	}
	h := RequireBearer(toks, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "in") }))
	cases := []struct {
		name, header string
		want         int
	}{
		{"first token", "Bearer alpha-token", 200},
		{"second token, trimmed in file", "Bearer beta-token", 200},
		{"no header", "", 401},
		{"wrong token", "Bearer gamma-token", 401},
		{"prefix of a token", "Bearer alpha", 401},
		{"token plus suffix", "Bearer alpha-token2", 401},
		{"basic scheme", "Basic alpha-token", 401},
		{"comment is not a token", "Bearer # ingest clients", 401},
		{"empty token", "Bearer ", 401},
		// RFC 7235 section 2.1: the scheme is case-insensitive.
		{"lower-case scheme", "bearer alpha-token", 200},
		{"upper-case scheme", "BEARER beta-token", 200},
		{"scheme without a space", "Beareralpha-token", 401},
	}
	var bodies []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/bags", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d", rec.Code, tc.want)
			}
			if tc.want == 401 {
				bodies = append(bodies, rec.Body.String())
				if rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			}
		})
	}
	// Every refusal looks the same: nothing tells which part failed.
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("401 bodies differ: %q vs %q", b, bodies[0])
		}
	}
}

func TestLoadTokensEmpty(t *testing.T) {
	if _, err := LoadTokens(tokenFile(t, "# nothing\n\n")); err == nil {
		t.Fatal("a token file without tokens was accepted")
	}
}

func TestLimitConcurrency(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	h := LimitConcurrency(2, 3*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	<-entered
	<-entered
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("third request: %d Retry-After=%q, want 503 and 3", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Fatalf("admitted request answered %d", c)
		}
	}
	// Slots are given back: the next request is served.
	resp, err = http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

type lineResult struct {
	line string
	n    int
	err  error
}

// refLines is the obvious implementation Lines must agree with: split the
// whole body in memory.
func refLines(body string, maxLine int, maxTotal int64) []lineResult {
	var out []lineResult
	read := int64(0)
	n := 0
	for len(body) > 0 {
		i := strings.IndexByte(body, '\n')
		var raw string
		if i < 0 {
			raw, body = body, ""
		} else {
			raw, body = body[:i+1], body[i+1:]
		}
		read += int64(len(raw))
		if maxTotal > 0 && read > maxTotal {
			return append(out, lineResult{"", n + 1, ErrBodyTooLong})
		}
		n++
		content := strings.TrimSuffix(raw, "\n")
		if len(content) > maxLine {
			out = append(out, lineResult{"", n, ErrLineTooLong})
			continue
		}
		out = append(out, lineResult{strings.TrimSuffix(content, "\r"), n, nil})
	}
	return append(out, lineResult{"", n + 1, io.EOF})
}

func collect(r io.Reader, maxLine int, maxTotal int64) []lineResult {
	l := NewLines(r, maxLine, maxTotal)
	var out []lineResult
	for {
		line, n, err := l.Next()
		out = append(out, lineResult{string(line), n, err})
		if err != nil && !errors.Is(err, ErrLineTooLong) {
			return out
		}
	}
}

// TestLinesMatchesReference: random bodies (short and long lines, \r\n, no
// final newline, limits around the sizes present), read through a reader
// that returns a few bytes at a time, agree with the in-memory reference.
func TestLinesMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(strings.Repeat("x", rng.IntN(1<<uint(rng.IntN(18)))))
			if rng.IntN(4) == 0 {
				b.WriteByte('\r')
			}
			b.WriteByte('\n')
		}
		if rng.IntN(2) == 0 {
			b.WriteString(strings.Repeat("y", rng.IntN(300)))
		}
		body := b.String()
		maxLine := rng.IntN(1 << uint(rng.IntN(18)))
		maxTotal := int64(0)
		if rng.IntN(2) == 0 {
			maxTotal = int64(rng.IntN(len(body) + 2))
		}
		got := collect(&chunky{s: body, rng: rng}, maxLine, maxTotal)
		want := refLines(body, maxLine, maxTotal)
		if len(got) != len(want) {
			t.Fatalf("iter %d: %d results, want %d", iter, len(got), len(want))
		}
		for i := range got {
			if got[i].line != want[i].line || got[i].n != want[i].n || !errors.Is(got[i].err, want[i].err) {
				t.Fatalf("iter %d result %d: got (%d bytes, %d, %v) want (%d bytes, %d, %v)", iter, i,
					len(got[i].line), got[i].n, got[i].err, len(want[i].line), want[i].n, want[i].err)
			}
		}
	}
}

type chunky struct {
	s   string
	rng *rand.Rand
}

func (c *chunky) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := min(len(p), len(c.s), 1+c.rng.IntN(100000))
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}

// TestLinesMemoryBounded: a 64 MiB line with a 1 KiB limit is skipped
// without buffering it (the reader never holds more than its buffer).
func TestLinesMemoryBounded(t *testing.T) {
	huge := io.MultiReader(io.LimitReader(repeat('a'), 64<<20), strings.NewReader("\n{\"ok\":1}\n"))
	l := NewLines(huge, 1024, 0)
	if _, _, err := l.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("huge line: %v", err)
	}
	if cap(l.line) > 2*64<<10 {
		t.Fatalf("line buffer grew to %d bytes", cap(l.line))
	}
	line, n, err := l.Next()
	if err != nil || !bytes.Equal(line, []byte(`{"ok":1}`)) || n != 2 {
		t.Fatalf("next line: %q %d %v", line, n, err)
	}
}

type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestSlowClientCut: a client trickling its body is disconnected by the
// server's read timeout instead of holding the connection.
func TestSlowClientCut(t *testing.T) {
	tm := Timeouts{ReadHeader: 200 * time.Millisecond, Read: 500 * time.Millisecond, Write: time.Second, Idle: time.Second}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		if err == nil {
			t.Error("slow body read to the end")
		}
	}))
	srv.Config = tm.Server("", srv.Config.Handler)
	srv.Start()
	defer srv.Close()
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 50; i++ {
			if _, err := pw.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		pw.Close()
	}()
	start := time.Now()
	resp, err := http.Post(srv.URL, "application/x-ndjson", pr)
	if err == nil {
		resp.Body.Close()
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("slow client held the connection for %v", d)
	}
}

// TestSkippedMatchesReference: every line skipped for its length, read a
// few bytes at a time, is described by its size, SHA-256 and first bytes
// exactly as the line Next would have returned without a limit (\r\n and
// a \r split from its \n by the reads included).
func TestSkippedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	skipped := 0
	for iter := range 2000 {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			b.WriteString(strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(1<<uint(rng.IntN(15)))))
			if rng.IntN(3) == 0 {
				b.WriteByte('\r')
			}
			if rng.IntN(4) == 0 {
				b.WriteString("x\rz")
			}
			b.WriteByte('\n')
		}
		body := b.String()
		maxLine := rng.IntN(1 << uint(rng.IntN(14)))
		want := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		l := NewLines(&chunky{s: body, rng: rng}, maxLine, 0)
		for {
			_, n, err := l.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if !errors.Is(err, ErrLineTooLong) {
				continue
			}
			skipped++
			line := strings.TrimSuffix(want[n-1], "\r")
			s := l.Skipped()
			if s.Size != int64(len(line)) || s.SHA256 != sha256.Sum256([]byte(line)) || string(s.Prefix) != line[:min(len(line), SkippedPrefix)] {
				t.Fatalf("iter %d line %d (%d bytes, limit %d): skipped size %d, prefix %d bytes, sum %x; want %d, %x",
					iter, n, len(line), maxLine, s.Size, len(s.Prefix), s.SHA256[:4], len(line), sha256.Sum256([]byte(line)))
			}
		}
	}
	if skipped < 1000 {
		t.Fatalf("only %d lines skipped: the test does not exercise Skipped", skipped)
	}
	t.Logf("%d skipped lines checked", skipped)
}
