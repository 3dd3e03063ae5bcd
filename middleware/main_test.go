package middleware_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/eventrec"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newReq builds a request to a test URL; body "" means none.
func newReq(t *testing.T, ctx context.Context, method, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://svc.test/v1/items?token=s3cr3t&page=2", r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// readAll reads and closes a response body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("close body: %v", err)
	}
	return string(b)
}

// recorder is an Observer that keeps every event (internal/eventrec).
type recorder struct{ eventrec.Recorder }

// named returns the events called name.
func (r *recorder) named(name string) []middleware.Event { return r.Named(name) }

// newEvents returns Events that feed a new recorder.
func newEvents() (*middleware.Events, *recorder) {
	rec := &recorder{}
	return &middleware.Events{Client: "billing", Observer: rec}, rec
}

// fixedSettings is retry settings without a budget and with a fixed
// backoff (JitterNone) of 1s doubling to 8s, 3 retries, default statuses.
func fixedSettings() middleware.RetrySettings {
	s := middleware.DefaultRetrySettings()
	s.InitialBackoff = time.Second
	s.MaxBackoff = 8 * time.Second
	s.Jitter = middleware.JitterNone
	return s
}

// opaqueBody is a request body without GetBody that is not one of the
// types http.NewRequest recognises, and that records its Close.
type opaqueBody struct {
	r      io.Reader
	mu     sync.Mutex
	closed bool
}

func newOpaqueBody(s string) *opaqueBody { return &opaqueBody{r: strings.NewReader(s)} }

func (b *opaqueBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *opaqueBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

func (b *opaqueBody) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// prebuilt answers every request with a copy of one prebuilt 200 response,
// as cheaply as an in-memory RoundTripper can.
func prebuilt() http.RoundTripper {
	proto := http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Body: emptyBody{}}
	return middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		r := proto
		return &r, nil
	})
}

// serialRT sends req through rt b.N times, closing each response.
func serialRT(b *testing.B, rt http.RoundTripper, req *http.Request) {
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// emptyBody is a zero-size body: storing it in an interface costs nothing.
type emptyBody struct{}

// benchRT runs rt serially and in parallel on one GET request.
func benchRT(b *testing.B, rt http.RoundTripper) {
	req, _ := http.NewRequest("GET", "http://svc.test/v1/items", nil)
	b.Run("serial", func(b *testing.B) { serialRT(b, rt, req) })
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Error(err) // b.Fatal is only for the benchmark's goroutine
					return
				}
				resp.Body.Close()
			}
		})
	})
}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }
