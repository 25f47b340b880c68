// Package httpguard protects the services' HTTP endpoints: bearer-token
// authentication, a bound on concurrent requests, server timeouts that close
// slow clients, and a body reader that hands out one line at a time under a
// per-line and a total limit, so that memory stays bounded whatever a client
// sends.
package httpguard

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Tokens is a set of accepted bearer tokens.
type Tokens struct {
	sums [][sha256.Size]byte
}

// LoadTokens reads one token a line; blank lines and lines starting with #
// are skipped. An empty file is an error: it would lock every client out
// while looking configured.
func LoadTokens(path string) (*Tokens, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth token file: %w", err)
	}
	t := &Tokens{}
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t.sums = append(t.sums, sha256.Sum256([]byte(line)))
	}
	if len(t.sums) == 0 {
		return nil, fmt.Errorf("auth token file %s holds no token", path)
	}
	return t, nil
}

// Valid reports whether tok is one of the tokens. Every configured token is
// compared, in constant time over digests of equal length, so the answer's
// timing says nothing about how close a guess was or which token matched.
func (t *Tokens) Valid(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
	ok := 0
	for i := range t.sums {
		ok |= subtle.ConstantTimeCompare(sum[:], t.sums[i][:])
	}
	return ok == 1
}

// RequireBearer answers 401 to a request without one of the tokens in its
// Authorization header. The answer is the same whatever part was wrong
// (missing header, wrong scheme, unknown token). A nil t lets every request
// through (authentication off).
func RequireBearer(t *Tokens, next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 7235, section 2.1): "bearer"
		// is as good as "Bearer".
		scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " ")
		if !found || !strings.EqualFold(scheme, "Bearer") || !t.Valid(strings.TrimSpace(tok)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mimlstream"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LimitConcurrency answers 503 with Retry-After to requests beyond limit in
// flight, instead of queueing them without bound. limit <= 0 means no bound.
func LimitConcurrency(limit int, retryAfter time.Duration, next http.Handler) http.Handler {
	if limit <= 0 {
		return next
	}
	slots := make(chan struct{}, limit)
	secs := strconv.FormatInt(max(1, int64(retryAfter/time.Second)), 10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", secs)
			// The client may still be sending its body: without this,
			// net/http reads (up to 256 KiB of) it before answering, and
			// a slow sender waits for its 503 as long as it sends.
			w.Header().Set("Connection", "close")
			http.Error(w, "too many concurrent requests", http.StatusServiceUnavailable)
		}
	})
}

// Timeouts bound how long a client may hold a connection.
type Timeouts struct {
	ReadHeader time.Duration
	Read       time.Duration
	Write      time.Duration
	Idle       time.Duration
}

// DefaultTimeouts bound a request's headers to 5 s and its whole body and
// answer to a minute: a client trickling bytes is cut off, however slowly it
// sends.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 5 * time.Second, Read: 60 * time.Second, Write: 60 * time.Second, Idle: 60 * time.Second}
}

// Server returns an http.Server with the timeouts set.
func (t Timeouts) Server(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// Errors of the line reader.
var (
	ErrLineTooLong = errors.New("line exceeds the per-line limit")
	ErrBodyTooLong = errors.New("body exceeds the total limit")
)

// Lines reads a body one line at a time. A line longer than maxLine is
// skipped (its bytes are read and dropped, never buffered whole) and
// reported with ErrLineTooLong, after which reading goes on; a body longer
// than maxTotal stops with ErrBodyTooLong. maxTotal <= 0 means no total
// limit (memory stays bounded by maxLine either way).
type Lines struct {
	r        *bufio.Reader
	maxLine  int
	maxTotal int64
	read     int64
	line     []byte
	n        int // 1-based number of the current line
	skipped  skipping
}

// SkippedPrefix is how many first bytes of a skipped line Lines keeps.
const SkippedPrefix = 4096

// Skipped describes a line skipped for its length: its first bytes (at
// most SkippedPrefix), its size and the SHA-256 of its bytes (without the
// end of line, as Next would have returned it), so that it can be
// dead-lettered and recognised without having been held.
type Skipped struct {
	Prefix []byte
	Size   int64
	SHA256 [sha256.Size]byte
}

// skipping accumulates the Skipped of the line being skipped.
type skipping struct {
	h      hash.Hash
	prefix []byte
	size   int64
	// cr: the bytes so far end with a \r, held back until it is known
	// not to end the line (Next drops a \r before the end of line).
	cr  bool
	sum [sha256.Size]byte
}

func (s *skipping) start() {
	if s.h == nil {
		s.h = sha256.New()
	}
	s.h.Reset()
	s.prefix, s.size, s.cr = s.prefix[:0], 0, false
}

// add adds b, a fragment of the line (its \n, if any, ends the line).
func (s *skipping) add(b []byte) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return
	}
	if s.cr {
		s.write([]byte("\r"))
		s.cr = false
	}
	if b[len(b)-1] == '\r' {
		b, s.cr = b[:len(b)-1], true
	}
	s.write(b)
}

func (s *skipping) write(b []byte) {
	_, _ = s.h.Write(b)
	s.size += int64(len(b))
	if n := min(len(b), SkippedPrefix-len(s.prefix)); n > 0 {
		s.prefix = append(s.prefix, b[:n]...)
	}
}

func (s *skipping) end() { s.h.Sum(s.sum[:0]) }

// Skipped describes the line of the last ErrLineTooLong; its Prefix is
// valid until the next call of Next.
func (l *Lines) Skipped() Skipped {
	return Skipped{Prefix: l.skipped.prefix, Size: l.skipped.size, SHA256: l.skipped.sum}
}

// NewLines wraps r.
func NewLines(r io.Reader, maxLine int, maxTotal int64) *Lines {
	return &Lines{r: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine, maxTotal: maxTotal}
}

// Next returns the next line without its newline (and without a trailing
// \r), its 1-based number, and an error: io.EOF at the end, ErrLineTooLong
// for a skipped line (call Next again), ErrBodyTooLong or a read error to
// stop. The returned slice is valid until the next call.
func (l *Lines) Next() ([]byte, int, error) {
	l.line = l.line[:0]
	tooLong := false
	for {
		frag, err := l.r.ReadSlice('\n')
		l.read += int64(len(frag))
		if l.maxTotal > 0 && l.read > l.maxTotal {
			return nil, l.n + 1, ErrBodyTooLong
		}
		if !tooLong {
			n := len(l.line) + len(frag)
			if bytes.HasSuffix(frag, []byte("\n")) {
				n-- // the newline is not part of the line
			}
			if n > l.maxLine {
				tooLong = true
				l.skipped.start()
				l.skipped.add(l.line)
				l.skipped.add(frag)
				l.line = l.line[:0]
			} else {
				l.line = append(l.line, frag...)
			}
		} else {
			l.skipped.add(frag)
		}
		switch {
		case err == nil:
			l.n++
			if tooLong {
				l.skipped.end()
				return nil, l.n, ErrLineTooLong
			}
			return trimEOL(l.line), l.n, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.line) == 0 && !tooLong {
				return nil, l.n + 1, io.EOF
			}
			l.n++
			if tooLong {
				l.skipped.end()
				return nil, l.n, ErrLineTooLong
			}
			return trimEOL(l.line), l.n, nil
		default:
			return nil, l.n + 1, err
		}
	}
}

// Rest returns a reader of the body after the lines read so far, under
// the same total limit (ErrBodyTooLong beyond it): for a body that turns
// out to be one document rather than lines.
func (l *Lines) Rest() io.Reader { return rest{l} }

type rest struct{ l *Lines }

func (r rest) Read(p []byte) (int, error) {
	n, err := r.l.r.Read(p)
	r.l.read += int64(n)
	if r.l.maxTotal > 0 && r.l.read > r.l.maxTotal {
		return 0, ErrBodyTooLong
	}
	return n, err
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
