package benchmarks

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// memBody is the two-byte body of an in-memory response: one allocation,
// the same for every stack, and not http.NoBody, as real bodies are not.
// Like net/http's bodies it has no WriteTo, so io.Copy takes the same path
// whether or not a stack wraps it.
type memBody struct{ r strings.Reader }

func (b *memBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (*memBody) Close() error { return nil }

// emptyHeader is shared by in-memory responses; nothing writes to it.
var emptyHeader = http.Header{}

// MemResponse answers req in memory with status and the body "ok": two
// allocations (the response and its body), the same for every stack.
func MemResponse(req *http.Request, status int) *http.Response {
	b := new(memBody)
	b.r.Reset("ok")
	return &http.Response{
		StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: emptyHeader, Body: b, ContentLength: 2, Request: req,
	}
}

// OK is the in-memory transport of the comparison: it answers every
// request 200 "ok" and does no I/O, so what a stack over it costs is the
// stack's own. It is safe for concurrent use.
type OK struct{}

// RoundTrip answers req 200 in memory.
func (OK) RoundTrip(req *http.Request) (*http.Response, error) {
	return MemResponse(req, http.StatusOK), nil
}

// Flaky answers 503 and 200 in turn, in memory: every logical call of a
// stack that retries once sees 503 then 200. Its zero value is ready; it is
// safe for concurrent use.
type Flaky struct{ n atomic.Uint64 }

// RoundTrip answers req 503 or 200, alternately.
func (f *Flaky) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.n.Add(1)%2 == 1 {
		return MemResponse(req, http.StatusServiceUnavailable), nil
	}
	return MemResponse(req, http.StatusOK), nil
}
