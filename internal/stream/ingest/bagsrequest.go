package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/mimlstream/mimlstream/internal/httpguard"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// process reads and publishes body, fills res and returns the status. Up
// to the publisher's InFlight batches of the body are published at once;
// their outcomes are merged into res in body order, and the answer is
// written only after every line's record is acknowledged (or the publish
// failed).
func (h *bagsHandler) process(ctx context.Context, body io.Reader, res *BagsResult, accepted *ids) int {
	q := &bagsRequest{h: h, res: res, accepted: accepted, lines: httpguard.NewLines(body, h.cfg.MaxLineBytes, h.cfg.MaxBodyBytes),
		fl: newFlights(h.pub.InFlight())}
	for q.failed == nil && q.readLine(ctx) {
	}
	return q.finish(ctx)
}

// httpChunk is a batch of lines of one request being published.
type httpChunk struct {
	raws  [][]byte
	lines []int
	bytes int
	acc   []string
	rej   []Rejection
	err   error
	done  chan struct{}
}

// bagsRequest is one POST /bags body being read line by line, its lines
// published in batches and their outcomes merged into the answer.
type bagsRequest struct {
	h        *bagsHandler
	res      *BagsResult
	accepted *ids
	lines    *httpguard.Lines
	fl       *flights

	// The lines read and not yet published.
	pending      [][]byte
	pendingLines []int
	pendingBytes int
	// chunks are the published batches not yet merged into res, in body
	// order; inflightLines and inflightBytes count their lines and bytes.
	chunks                       []*httpChunk
	inflightLines, inflightBytes int

	// nonBlank counts the lines that are not blank.
	nonBlank int
	// failed is the first publish that failed: the client resends from
	// res.NextLine.
	failed error
	// stop is why reading stopped before the body's end (not a failed
	// publish), and stopStatus the answer's status then.
	stop       error
	stopStatus int
}

// readLine reads and handles the next line of the body. It returns false
// when reading stops: at the body's end, a fault of the body, a failed
// publish, or too many rejections.
func (q *bagsRequest) readLine(ctx context.Context) bool {
	line, n, err := q.lines.Next()
	switch {
	case errors.Is(err, io.EOF):
		return false
	case errors.Is(err, httpguard.ErrLineTooLong):
		return q.lineTooLong(ctx, n) && q.bound(ctx)
	case errors.Is(err, httpguard.ErrBodyTooLong):
		q.halt(n, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit at line %d", q.h.cfg.MaxBodyBytes, n))
		return false
	case err != nil:
		// The client went away or was too slow (read timeout).
		q.halt(n, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err))
		return false
	}
	q.res.Lines = n
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return true
	}
	if q.nonBlank == 0 && opensDocument(line) {
		q.document(ctx, line, n)
		return false
	}
	q.nonBlank++
	// Lines reuses its buffer: keep a copy.
	q.hold(bytes.Clone(line), n)
	return q.bound(ctx)
}

// hold adds a line to the pending batch.
func (q *bagsRequest) hold(line []byte, n int) {
	q.pending = append(q.pending, line)
	q.pendingLines = append(q.pendingLines, n)
	q.pendingBytes += len(line)
}

// halt stops reading at line n, answered with status and err.
func (q *bagsRequest) halt(n, status int, err error) {
	q.res.NextLine, q.stopStatus, q.stop = n, status, err
}

// lineTooLong rejects line n, skipped for its length, with a dead letter
// as at every other door: its first bytes, size and SHA-256 (the line
// itself was never held). It returns false when that dead letter could not
// be published.
func (q *bagsRequest) lineTooLong(ctx context.Context, n int) bool {
	q.res.Lines = n
	q.nonBlank++
	x, err := q.h.pub.RejectSkipped(ctx, q.lines.Skipped(), q.h.cfg.MaxLineBytes)
	if err != nil {
		// The lines before it are published and reported first (or an
		// earlier failure is): the client resends from it.
		q.flush(ctx)
		q.merge(len(q.chunks))
		if q.failed == nil {
			q.failed, q.res.NextLine = err, n
		}
		return false
	}
	q.res.Rejected = append(q.res.Rejected, LineRejection{Line: n, Reason: x.Reason, Error: x.Error})
	return true
}

// document reads the body as one JSON document (a pretty-printed bag)
// whose first line, line n, is first: read whole under the line limit,
// published as one bag reported at its first line.
func (q *bagsRequest) document(ctx context.Context, first []byte, n int) {
	q.nonBlank++
	d := newDocument(first, q.h.cfg.MaxLineBytes)
	_, err := io.Copy(d, q.lines.Rest())
	q.res.Lines = n + d.lines
	if d.partial {
		q.res.Lines++
	}
	switch {
	case errors.Is(err, httpguard.ErrBodyTooLong):
		q.halt(n, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", q.h.cfg.MaxBodyBytes))
	case err != nil:
		q.halt(n, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err))
	case d.size > q.h.cfg.MaxLineBytes:
		x, err := q.h.pub.RejectSkipped(ctx, d.skipped(), q.h.cfg.MaxLineBytes)
		if err != nil {
			q.failed, q.res.NextLine = err, n
			return
		}
		q.res.Rejected = append(q.res.Rejected, LineRejection{Line: n, Reason: x.Reason, Error: x.Error})
	default:
		q.hold(bytes.TrimSpace(d.buf), n)
	}
}

// bound publishes the pending batch when full, and before it could take
// the rejections past maxRejectedLines: the pending lines stay fewer than
// the rejections still allowed. The lines in flight may all be rejected
// too: when they could reach the bound, their outcome is awaited first.
// It returns false when the rejections reach the bound and processing
// stops.
func (q *bagsRequest) bound(ctx context.Context) bool {
	if len(q.pending)+q.inflightLines >= maxRejectedLines-len(q.res.Rejected) {
		q.merge(len(q.chunks))
	}
	if len(q.pending) > 0 && (len(q.pending) >= q.h.cfg.Batch || q.pendingBytes >= maxBatchBytes || len(q.pending) >= maxRejectedLines-len(q.res.Rejected)) {
		q.flush(ctx)
		if len(q.pending)+q.inflightLines >= maxRejectedLines-len(q.res.Rejected) {
			q.merge(len(q.chunks))
		}
	}
	if q.failed == nil && len(q.res.Rejected) >= maxRejectedLines {
		q.halt(q.res.Lines+1, http.StatusUnprocessableEntity, fmt.Errorf("%d lines rejected, the most one answer reports; processing stopped", maxRejectedLines))
		return false
	}
	return true
}

// flush starts publishing the pending lines.
func (q *bagsRequest) flush(ctx context.Context) {
	if len(q.pending) == 0 {
		return
	}
	c := &httpChunk{raws: q.pending, lines: q.pendingLines, bytes: q.pendingBytes, done: make(chan struct{})}
	q.pending, q.pendingLines, q.pendingBytes = nil, nil, 0
	// The batches in flight share one maxBatchBytes: a request holds no
	// more of its body than it did with one batch at a time, and small
	// batches still overlap.
	for len(q.chunks) > 0 && q.inflightBytes+c.bytes > maxBatchBytes {
		q.merge(1)
	}
	keys := make([]string, 0, len(c.raws))
	for _, raw := range c.raws {
		if id, ok := wire.BagID(raw); ok {
			keys = append(keys, id)
		}
	}
	q.chunks = append(q.chunks, c)
	q.inflightLines += len(c.lines)
	q.inflightBytes += c.bytes
	err := q.fl.Go(ctx, keys, func() error {
		defer close(c.done)
		c.acc, c.rej, c.err = q.h.pub.PublishRaw(ctx, c.raws)
		return c.err
	})
	if err != nil {
		// Not started: an earlier batch failed or the request ended.
		c.err = err
		close(c.done)
	}
	q.merge(0)
}

// merge moves the outcome of the completed batches at the head of chunks
// into res, waiting for the first wait of them. After a failed batch the
// answer sends the client back to its first line; the batches after it
// are waited for, but not reported: the client resends them.
func (q *bagsRequest) merge(wait int) {
	for len(q.chunks) > 0 {
		c := q.chunks[0]
		if wait > 0 {
			<-c.done
			wait--
		} else {
			select {
			case <-c.done:
			default:
				return
			}
		}
		q.chunks = q.chunks[1:]
		q.inflightLines -= len(c.lines)
		q.inflightBytes -= c.bytes
		if q.failed != nil {
			continue
		}
		if c.err != nil {
			q.failed = c.err
			q.res.NextLine = c.lines[0]
			continue
		}
		for _, x := range c.rej {
			q.res.Rejected = append(q.res.Rejected, LineRejection{Line: c.lines[x.Index], Reason: x.Reason, Error: x.Error})
		}
		for _, id := range c.acc {
			q.accepted.add(id)
		}
		q.res.Accepted += len(c.acc)
	}
}

// finish publishes what is pending, waits for every batch and completes
// the answer: it returns its status.
func (q *bagsRequest) finish(ctx context.Context) int {
	res := q.res
	// Lines read whole before the body ended (or was cut off) are
	// published whatever happened after them.
	if q.failed == nil {
		q.flush(ctx)
	}
	q.merge(len(q.chunks))
	_ = q.fl.Wait() // the batches' errors are merged above
	// Oversize lines are reported as read, the batches' rejections as they
	// complete: the answer lists them in body order.
	slices.SortStableFunc(res.Rejected, func(a, b LineRejection) int { return a.Line - b.Line })
	if q.failed != nil {
		// The client resends from NextLine: what lies beyond is not
		// reported.
		res.Rejected = slices.DeleteFunc(res.Rejected, func(r LineRejection) bool { return r.Line >= res.NextLine })
		return q.h.publishFailed(res, q.failed)
	}
	if q.stop != nil {
		res.Error = q.stop.Error()
		return q.stopStatus
	}
	res.Complete = true
	switch {
	case q.nonBlank == 0:
		res.Error = "empty body"
		return http.StatusBadRequest
	case len(res.Rejected) > 0:
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}
