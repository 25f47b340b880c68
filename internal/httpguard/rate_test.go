package httpguard

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestMinRate sends bodies at a steady pace to a handler reading through
// MinRate(rate 1000 B/s, grace 500 ms): one at 4000 B/s is read whole over
// 1.5 s, well past the grace; one at 100 B/s is cut off soon after the
// grace, with ErrBodyTooSlow; one that sends nothing at all too.
func TestMinRate(t *testing.T) {
	type result struct {
		n   int64
		err error
		at  time.Duration
	}
	results := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		n, err := io.Copy(io.Discard, MinRate(w, r.Body, 1000, 500*time.Millisecond))
		results <- result{n, err, time.Since(start)}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		chunk  int // bytes every 50 ms
		chunks int
		ok     bool
	}{
		{"4000 B/s", 200, 30, true},
		{"100 B/s", 5, 60, false},
		{"silent", 0, 1, false},
	} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		size := max(tc.chunk*tc.chunks, 1)
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
		go func() {
			for range tc.chunks {
				if tc.chunk > 0 {
					if _, err := c.Write([]byte(strings.Repeat("x", tc.chunk))); err != nil {
						return
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		res := <-results
		c.Close()
		t.Logf("%s: read %d of %d bytes in %v: %v", tc.name, res.n, size, res.at.Round(10*time.Millisecond), res.err)
		if tc.ok && (res.err != nil || res.n != int64(size)) {
			t.Errorf("%s: %d bytes, %v; want the whole body", tc.name, res.n, res.err)
		}
		if !tc.ok && (!errors.Is(res.err, ErrBodyTooSlow) || res.at > 2*time.Second) {
			t.Errorf("%s: %v after %v; want ErrBodyTooSlow soon after the grace", tc.name, res.err, res.at)
		}
	}
}
