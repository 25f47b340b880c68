package httpguard

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// ErrBodyTooSlow is the error of a body read that fell below the minimum
// rate (MinRate).
var ErrBodyTooSlow = errors.New("request body sent below the minimum rate")

// MinRate bounds how slowly a client may send a request body: after grace,
// it must have sent at least rate bytes a second on average since the body
// began, or the next read fails with ErrBodyTooSlow (the connection's read
// deadline passes). A server's read timeout alone lets a handful of clients
// trickling bytes hold every slot of a concurrency bound until it expires
// (eight bodies at 10 B/s kept POST /bags at 503 for the two minutes of
// its read timeout); a rate frees a slot within grace plus what the client
// sent divided by rate. The deadline is the connection's
// (http.ResponseController), so a client that sends nothing at all is cut
// off as surely as one that sends slowly. rate <= 0 returns body as is.
func MinRate(w http.ResponseWriter, body io.ReadCloser, rate int64, grace time.Duration) io.ReadCloser {
	if rate <= 0 {
		return body
	}
	m := &minRate{rc: http.NewResponseController(w), body: body, rate: rate, grace: grace, start: time.Now()}
	m.extend()
	return m
}

type minRate struct {
	rc    *http.ResponseController
	body  io.ReadCloser
	rate  int64
	grace time.Duration
	start time.Time
	read  int64
}

// extend moves the read deadline to when the bytes read so far stop
// covering the rate.
func (m *minRate) extend() {
	owed := time.Duration(float64(m.read) / float64(m.rate) * float64(time.Second))
	_ = m.rc.SetReadDeadline(m.start.Add(m.grace + owed))
}

func (m *minRate) Read(p []byte) (int, error) {
	n, err := m.body.Read(p)
	m.read += int64(n)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("%w: %d bytes in %v, under %d bytes a second after %v: %w",
				ErrBodyTooSlow, m.read, time.Since(m.start).Round(time.Millisecond), m.rate, m.grace, err)
		}
		return n, err
	}
	m.extend()
	return n, nil
}

func (m *minRate) Close() error { return m.body.Close() }
