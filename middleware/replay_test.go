package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// failingBody fails its first Read.
type failingBody struct{ closed bool }

func (b *failingBody) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }
func (b *failingBody) Close() error             { b.closed = true; return nil }

func TestReplayBufferReadErrorClosesBody(t *testing.T) {
	body := &failingBody{}
	req := newReq(t, context.Background(), "PUT", "")
	req.Body, req.ContentLength = body, -1
	rt := fakert.New()
	_, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || !body.closed {
		t.Fatalf("got %v (closed %v), want the read error and the body closed", err, body.closed)
	}
	if rt.Calls() != 0 {
		t.Fatalf("got %d calls, want 0", rt.Calls())
	}
}

func TestReplayBufferedCloneHasGetBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := newReq(t, context.Background(), "PUT", "")
		req.Body, req.ContentLength = newOpaqueBody("hello"), -1
		var got []string
		check := func(r *http.Request) {
			if r.GetBody == nil || r.ContentLength != 5 {
				t.Errorf("clone: GetBody %v, ContentLength %d; want set, 5", r.GetBody != nil, r.ContentLength)
				return
			}
			b, _ := r.GetBody()
			s, _ := io.ReadAll(b)
			got = append(got, string(s))
		}
		rt := fakert.New(fakert.Step{Status: 503, OnRequest: check}, fakert.Step{OnRequest: check})
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if len(got) != 2 || got[0] != "hello" || got[1] != "hello" {
			t.Fatalf("got %q, want hello twice", got)
		}
		if req.GetBody != nil || req.ContentLength != -1 {
			t.Fatal("caller's request was changed")
		}
	})
}

func TestReplayEmptyBufferedBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := newReq(t, context.Background(), "PUT", "")
		req.Body, req.ContentLength = newOpaqueBody(""), -1
		rt := fakert.Status(503, 200)
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		reqs := rt.Requests()
		if len(reqs) != 2 || len(reqs[0].Body) != 0 || len(reqs[1].Body) != 0 {
			t.Fatalf("got %d calls, want 2 with empty bodies", len(reqs))
		}
	})
}

func TestReplayIneligibleMethodNotBuffered(t *testing.T) {
	req := newReq(t, context.Background(), "POST", "")
	req.Body, req.ContentLength = newOpaqueBody("stream"), -1
	var seen io.ReadCloser
	rt := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
		seen = r.Body
		r.Body.Close()
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	if _, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if seen != req.Body {
		t.Fatal("a POST that cannot be retried should be sent with the caller's body, unbuffered")
	}
}

func TestRetryReplaysBodyByteIdentical(t *testing.T) {
	payload := strings.Repeat("0123456789abcdef", 1000) // 16000 bytes
	tests := []struct {
		name     string
		settings func(*middleware.RetrySettings)
		getBody  bool
	}{
		{"RetryAllMethods, GetBody", func(s *middleware.RetrySettings) { s.RetryAllMethods = true }, true},
		{"RetryAllMethods, buffered", func(s *middleware.RetrySettings) { s.RetryAllMethods = true }, false},
		{"RetryableMethods, GetBody", func(s *middleware.RetrySettings) { s.RetryableMethods = []string{"POST"} }, true},
		{"RetryableMethods, buffered", func(s *middleware.RetrySettings) { s.RetryableMethods = []string{"POST"} }, false},
		{"buffered at exactly the limit", func(s *middleware.RetrySettings) { s.RetryAllMethods = true; s.MaxBufferedBody = int64(len(payload)) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fixedSettings()
				tt.settings(&s)
				req := newReq(t, context.Background(), "POST", payload)
				var opaque *opaqueBody
				if !tt.getBody {
					opaque = newOpaqueBody(payload)
					req.Body, req.GetBody, req.ContentLength = opaque, nil, -1
				}
				rt := fakert.Status(503, 502, 201)
				resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if resp.StatusCode != 201 || rt.Calls() != 3 {
					t.Fatalf("got %d after %d calls, want 201 after 3", resp.StatusCode, rt.Calls())
				}
				for i, r := range rt.Requests() {
					if !bytes.Equal(r.Body, []byte(payload)) {
						t.Fatalf("attempt %d: body differs (%d bytes, want %d)", i+1, len(r.Body), len(payload))
					}
				}
				if opaque != nil && !opaque.isClosed() {
					t.Fatal("caller's body not closed")
				}
			})
		})
	}
}

func TestRetryBodyLongerThanBufferSentOnce(t *testing.T) {
	for _, cl := range []int64{-1, 40} {
		t.Run("content length "+map[int64]string{-1: "unknown", 40: "known"}[cl], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				payload := strings.Repeat("x", 39) + "!"
				s := fixedSettings()
				s.RetryAllMethods = true
				s.MaxBufferedBody = 16
				req := newReq(t, context.Background(), "POST", "")
				body := newOpaqueBody(payload)
				req.Body, req.ContentLength = body, cl
				rt := fakert.Status(503, 200)
				resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if resp.StatusCode != 503 || rt.Calls() != 1 {
					t.Fatalf("got %d after %d calls, want 503 after 1", resp.StatusCode, rt.Calls())
				}
				if got := string(rt.Requests()[0].Body); got != payload {
					t.Fatalf("got body %q, want %q", got, payload)
				}
				if !body.isClosed() {
					t.Fatal("caller's body not closed")
				}
			})
		})
	}
}

func TestRetryGetBodyFailureReturnsLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := newReq(t, context.Background(), "PUT", "data")
		req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
		rt := fakert.New(fakert.Step{Status: 503, Body: "busy"})
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp); resp.StatusCode != 503 || body != "busy" || rt.Calls() != 1 {
			t.Fatalf("got %d %q after %d calls, want 503 busy after 1", resp.StatusCode, body, rt.Calls())
		}
	})
}
