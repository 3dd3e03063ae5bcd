// Package fakert is a scripted, in-memory http.RoundTripper for tests across
// switchboard. A Transport answers each request with the next Step of its
// script: a status, headers (Retry-After…), a body, or an error, optionally
// after a delay that honours the request's context. It records every request
// it saw and counts the response bodies it handed out and those closed, so
// tests can check that superseded responses were closed.
//
// It does no network I/O, so it works inside testing/synctest bubbles: a
// Step's Delay is a timer, and time moves as the bubble's fake clock does.
//
//	rt := fakert.New(
//		fakert.Step{Status: 503, Header: http.Header{"Retry-After": {"2"}}},
//		fakert.Step{Err: io.ErrUnexpectedEOF},
//		fakert.Step{Status: 200, Body: "ok"},
//	)
//	client := &http.Client{Transport: middleware.Retry(s, o)(rt)}
//	// … rt.Calls() == 3, rt.Requests()[2].Body, rt.OpenBodies() == 1
package fakert

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Step is one scripted answer. The zero Step answers 200 with an empty body.
type Step struct {
	// Status is the response status code; zero means 200. Ignored with Err.
	Status int
	// Header is copied into the response.
	Header http.Header
	// Body is the response body.
	Body string
	// Err, when set, is returned instead of a response.
	Err error
	// Delay is how long the transport waits before answering. When the
	// request's context ends first, it returns the context's error instead.
	Delay time.Duration
	// OnRequest, when set, is called with the request as received, before the
	// answer (e.g. to change it, to check that callers send clones).
	OnRequest func(req *http.Request)
}

// Request is what the transport saw of one request.
type Request struct {
	Attempt       int // 1-based position in the order requests arrived
	Method        string
	URL           string
	Header        http.Header // a copy, taken before Step.OnRequest ran
	Body          []byte      // the whole body, read before answering; nil without one
	ContentLength int64
	At            time.Time     // when it arrived (time.Now, fake in a synctest bubble)
	Req           *http.Request // the request itself, to compare identities
}

// Transport is a scripted http.RoundTripper. Request i (0-based) gets
// Steps[i]; when the script runs out, the last step repeats (an empty script
// answers 200). It reads and closes every request body, as RoundTrippers
// must. The zero Transport answers 200 to everything. It is safe for
// concurrent use; its methods may be called while requests are in flight.
type Transport struct {
	mu       sync.Mutex
	steps    []Step
	requests []Request
	bodies   []*Body
	handed   int // response bodies handed out
	closed   int // response bodies closed (each counted once)
}

// New returns a Transport that answers with steps in order.
func New(steps ...Step) *Transport {
	return &Transport{steps: steps}
}

// Status returns a Transport that answers with the given status codes in
// order, then repeats the last one.
func Status(codes ...int) *Transport {
	steps := make([]Step, len(codes))
	for i, c := range codes {
		steps[i] = Step{Status: c}
	}
	return New(steps...)
}

// RoundTrip answers req with the next step.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("fakert: read request body: %w", err)
		}
		body = b
	}
	t.mu.Lock()
	n := len(t.requests) + 1
	step := Step{}
	if len(t.steps) > 0 {
		step = t.steps[min(n, len(t.steps))-1]
	}
	rec := Request{
		Attempt:       n,
		Method:        req.Method,
		Header:        req.Header.Clone(),
		Body:          body,
		ContentLength: req.ContentLength,
		At:            now,
		Req:           req,
	}
	if req.URL != nil {
		rec.URL = req.URL.String()
	}
	t.requests = append(t.requests, rec)
	t.mu.Unlock()

	if step.OnRequest != nil {
		step.OnRequest(req)
	}
	if err := req.Context().Err(); err != nil {
		return nil, fmt.Errorf("fakert: request context done: %w", err)
	}
	if step.Delay > 0 {
		timer := time.NewTimer(step.Delay)
		select {
		case <-timer.C:
		case <-req.Context().Done():
			timer.Stop()
			return nil, fmt.Errorf("fakert: request ended while waiting: %w", req.Context().Err())
		}
	}
	if step.Err != nil {
		return nil, step.Err
	}
	status := step.Status
	if status == 0 {
		status = http.StatusOK
	}
	rb := &Body{r: strings.NewReader(step.Body), t: t}
	t.mu.Lock()
	t.handed++
	t.bodies = append(t.bodies, rb)
	t.mu.Unlock()
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        step.Header.Clone(),
		Body:          rb,
		ContentLength: int64(len(step.Body)),
		Request:       req,
	}, nil
}

// Requests returns a copy of the requests seen so far, in arrival order.
func (t *Transport) Requests() []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Request(nil), t.requests...)
}

// Bodies returns the response bodies handed out so far, in order.
func (t *Transport) Bodies() []*Body {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Body(nil), t.bodies...)
}

// Calls returns how many requests the transport has seen.
func (t *Transport) Calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.requests)
}

// BodiesHanded returns how many response bodies the transport handed out.
func (t *Transport) BodiesHanded() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.handed
}

// BodiesClosed returns how many of those bodies were closed.
func (t *Transport) BodiesClosed() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// OpenBodies returns how many response bodies were handed out and not yet
// closed.
func (t *Transport) OpenBodies() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.handed - t.closed
}

// ErrBodyClosed is returned by Read on a closed Body.
var ErrBodyClosed = errors.New("fakert: read on closed response body")

// Body is the body of a scripted response. It counts its first Close with
// its Transport and reports how much was read. It is safe for concurrent use.
type Body struct {
	t      *Transport
	mu     sync.Mutex
	r      *strings.Reader
	read   int
	closed bool
}

// Read reads from the scripted body; after Close it returns ErrBodyClosed.
func (b *Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, ErrBodyClosed
	}
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

// Close marks the body closed; the first call counts with the Transport.
func (b *Body) Close() error {
	b.mu.Lock()
	first := !b.closed
	b.closed = true
	b.mu.Unlock()
	if first {
		b.t.mu.Lock()
		b.t.closed++
		b.t.mu.Unlock()
	}
	return nil
}

// Closed reports whether Close was called.
func (b *Body) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// BytesRead returns how many bytes were read from the body.
func (b *Body) BytesRead() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read
}
