package benchmarks_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/benchmarks"
)

// call sends req through d as benchmarks.Call does; it returns the
// failure's text, "" for none.
func call(d benchmarks.Doer, req *http.Request, want int) string {
	if err := benchmarks.Call(d, req, want); err != nil {
		return err.Error()
	}
	return ""
}

func serial(b *testing.B, d benchmarks.Doer, newReq func() *http.Request, want int) {
	b.ReportAllocs()
	for b.Loop() {
		if msg := call(d, newReq(), want); msg != "" {
			b.Fatal(msg)
		}
	}
}

func parallel(b *testing.B, d benchmarks.Doer, newReq func() *http.Request, want int) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if msg := call(d, newReq(), want); msg != "" {
				b.Error(msg)
				return
			}
		}
	})
}

// eachStack runs f as a sub-benchmark per stack over base (nil: network
// transports), skipping those named in skip.
func eachStack(b *testing.B, base http.RoundTripper, f func(b *testing.B, s benchmarks.Stack), skip ...string) {
	eachStackBackoff(b, base, benchmarks.BaseBackoff, f, skip...)
}

// eachStackBackoff is eachStack with backoff as the first retry's delay.
func eachStackBackoff(b *testing.B, base http.RoundTripper, backoff time.Duration, f func(b *testing.B, s benchmarks.Stack), skip ...string) {
	stacks, err := benchmarks.StacksWithBackoff(base, backoff)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range stacks {
		defer s.Close()
	}
next:
	for _, s := range stacks {
		for _, name := range skip {
			if s.Name == name {
				continue next
			}
		}
		b.Run(s.Name, func(b *testing.B) { f(b, s) })
	}
}

// getter returns a func that hands out one shared GET request to url: a
// request without a body can be sent any number of times.
func getter(b *testing.B, url string) func() *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	return func() *http.Request { return req }
}

const memURL = "http://svc.test/v1/items"

// BenchmarkMemory is the in-memory success path: a GET answered 200 by a
// RoundTripper that does no I/O, so what is measured is each stack's own
// cost. "bare" is a plain *http.Client over the same RoundTripper.
func BenchmarkMemory(b *testing.B) {
	newReq := getter(b, memURL)
	b.Run("serial", func(b *testing.B) {
		eachStack(b, benchmarks.OK{}, func(b *testing.B, s benchmarks.Stack) { serial(b, s.Doer, newReq, 200) })
	})
	b.Run("parallel", func(b *testing.B) {
		eachStack(b, benchmarks.OK{}, func(b *testing.B, s benchmarks.Stack) { parallel(b, s.Doer, newReq, 200) })
	})
}

// BenchmarkMemory503Then200 is one retry per call: in memory, every first
// attempt gets 503 and every retry 200. With the policy's 1µs backoff
// ("backoff-1us") a timer's wake-up, tens of µs on a busy machine, dwarfs
// the rest, so "backoff-0" retries at once, without a timer in the
// libraries that skip it for a zero delay (all but failsafe-go and
// go-retryablehttp, which start one anyway). "bare-2x" is two plain calls,
// the cost of the two attempts alone. switchboard's defaults are skipped
// (their 500ms backoff would be measured).
func BenchmarkMemory503Then200(b *testing.B) {
	newReq := getter(b, memURL)
	for _, bo := range []struct {
		name    string
		backoff time.Duration
	}{{"backoff-0", 0}, {"backoff-1us", benchmarks.BaseBackoff}} {
		backoff := bo.backoff
		b.Run(bo.name, func(b *testing.B) {
			b.Run("bare-2x", func(b *testing.B) {
				c := &http.Client{Transport: &benchmarks.Flaky{}}
				b.ReportAllocs()
				for b.Loop() {
					if msg := call(c, newReq(), 503); msg != "" {
						b.Fatal(msg)
					}
					if msg := call(c, newReq(), 200); msg != "" {
						b.Fatal(msg)
					}
				}
			})
			eachStackBackoff(b, &benchmarks.Flaky{}, backoff, func(b *testing.B, s benchmarks.Stack) { serial(b, s.Doer, newReq, 200) },
				benchmarks.NameBare, benchmarks.NameDefaults)
		})
	}
}

// loopback starts an HTTP/1.1 server on 127.0.0.1 that reads the request
// body and answers "ok".
func loopback(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkLoopback is a GET over TCP to a server on 127.0.0.1, connections
// kept alive; each stack has its own transport with the same pool sizes.
func BenchmarkLoopback(b *testing.B) {
	srv := loopback(b)
	newReq := getter(b, srv.URL+"/v1/items")
	b.Run("serial", func(b *testing.B) {
		eachStack(b, nil, func(b *testing.B, s benchmarks.Stack) { serial(b, s.Doer, newReq, 200) })
	})
	b.Run("parallel", func(b *testing.B) {
		eachStack(b, nil, func(b *testing.B, s benchmarks.Stack) { parallel(b, s.Doer, newReq, 200) })
	})
}

// BenchmarkLoopbackPost is a POST of a 1 KiB body to 127.0.0.1: each call
// makes its request (http.NewRequest over a bytes.Reader, which sets
// GetBody), bare included.
func BenchmarkLoopbackPost(b *testing.B) {
	srv := loopback(b)
	url := srv.URL + "/v1/items"
	payload := bytes.Repeat([]byte("x"), 1024)
	newReq := func() *http.Request {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			panic(err)
		}
		return req
	}
	b.Run("serial", func(b *testing.B) {
		eachStack(b, nil, func(b *testing.B, s benchmarks.Stack) { serial(b, s.Doer, newReq, 200) })
	})
}

// sink keeps the compiler from dropping the stdlib calls measured below.
var sink *http.Request

// BenchmarkStdlibDeadline measures what a total timeout needs from the
// standard library: context.WithTimeout, Request.WithContext and the
// cancel, the floor under any layer that puts a deadline on a call.
// "alone" is the three calls and nothing else; "bare-client" is a bare
// client's in-memory GET made under such a deadline, cancelled once the
// body is read, as a caller would do it by hand.
func BenchmarkStdlibDeadline(b *testing.B) {
	req := getter(b, memURL)()
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
			sink = req.WithContext(ctx)
			cancel()
		}
	})
	b.Run("bare-client", func(b *testing.B) {
		c := &http.Client{Transport: benchmarks.OK{}}
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
			msg := call(c, req.WithContext(ctx), 200)
			cancel()
			if msg != "" {
				b.Fatal(msg)
			}
		}
	})
}
