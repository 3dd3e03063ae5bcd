package fakert_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/fakert"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, ctx context.Context, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/x?a=1", r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test", "1")
	return req
}

func TestScriptInOrderThenLastRepeats(t *testing.T) {
	errBoom := errors.New("boom")
	rt := fakert.New(
		fakert.Step{Status: 503, Header: http.Header{"Retry-After": {"2"}}, Body: "busy"},
		fakert.Step{Err: errBoom},
		fakert.Step{Body: "ok"},
	)
	want := []struct {
		status int
		err    error
		body   string
	}{{503, nil, "busy"}, {0, errBoom, ""}, {200, nil, "ok"}, {200, nil, "ok"}}
	for i, w := range want {
		resp, err := rt.RoundTrip(get(t, context.Background(), "payload"))
		if !errors.Is(err, w.err) {
			t.Fatalf("call %d: got err %v, want %v", i+1, err, w.err)
		}
		if w.err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != w.status || string(b) != w.body {
			t.Fatalf("call %d: got %d %q, want %d %q", i+1, resp.StatusCode, b, w.status, w.body)
		}
		if i == 0 && resp.Header.Get("Retry-After") != "2" {
			t.Fatalf("got Retry-After %q, want 2", resp.Header.Get("Retry-After"))
		}
	}
	if got := rt.Calls(); got != 4 {
		t.Fatalf("got %d calls, want 4", got)
	}
	reqs := rt.Requests()
	for i, r := range reqs {
		if r.Attempt != i+1 || r.Method != http.MethodPost || r.URL != "http://svc.test/x?a=1" ||
			string(r.Body) != "payload" || r.Header.Get("X-Test") != "1" {
			t.Fatalf("request %d recorded as %+v", i, r)
		}
	}
	if got, want := rt.BodiesHanded(), 3; got != want {
		t.Fatalf("got %d bodies handed, want %d", got, want)
	}
	if got := rt.OpenBodies(); got != 0 {
		t.Fatalf("got %d open bodies, want 0", got)
	}
}

func TestZeroTransportAnswers200(t *testing.T) {
	var rt fakert.Transport
	resp, err := rt.RoundTrip(get(t, context.Background(), ""))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want 200", resp, err)
	}
	resp.Body.Close()
	if rt.Requests()[0].Body != nil {
		t.Fatalf("got body %q, want nil", rt.Requests()[0].Body)
	}
}

func TestBodyCloseCountedOnce(t *testing.T) {
	rt := fakert.Status(200)
	resp, err := rt.RoundTrip(get(t, context.Background(), ""))
	if err != nil {
		t.Fatal(err)
	}
	if rt.OpenBodies() != 1 {
		t.Fatalf("got %d open bodies, want 1", rt.OpenBodies())
	}
	resp.Body.Close()
	resp.Body.Close()
	if got := rt.BodiesClosed(); got != 1 {
		t.Fatalf("got %d closed, want 1", got)
	}
	if _, err := resp.Body.Read(make([]byte, 1)); !errors.Is(err, fakert.ErrBodyClosed) {
		t.Fatalf("got %v, want ErrBodyClosed", err)
	}
	if b := rt.Bodies()[0]; !b.Closed() {
		t.Fatal("got Closed false, want true")
	}
}

func TestRequestBodyIsClosed(t *testing.T) {
	rt := fakert.New()
	cb := &closeTracker{Reader: strings.NewReader("abc")}
	req := get(t, context.Background(), "")
	req.Body = cb
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !cb.closed {
		t.Fatal("request body not closed")
	}
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestDelayHonoursTimeAndContext(t *testing.T) {
	t.Run("waits", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := fakert.New(fakert.Step{Delay: 3 * time.Second})
			start := time.Now()
			resp, err := rt.RoundTrip(get(t, context.Background(), ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := time.Since(start); got != 3*time.Second {
				t.Fatalf("got %v, want 3s", got)
			}
			if at := rt.Requests()[0].At; !at.Equal(start) {
				t.Fatalf("got At %v, want %v", at, start)
			}
		})
	})
	t.Run("context ends first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := fakert.New(fakert.Step{Delay: time.Hour})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := rt.RoundTrip(get(t, ctx, ""))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want DeadlineExceeded", err)
			}
			if got := time.Since(start); got != time.Second {
				t.Fatalf("got %v, want 1s", got)
			}
		})
	})
	t.Run("context already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := fakert.New().RoundTrip(get(t, ctx, ""))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want Canceled", err)
		}
	})
}

func TestOnRequestSeesRequest(t *testing.T) {
	rt := fakert.New(fakert.Step{OnRequest: func(r *http.Request) { r.Header.Set("X-Mutated", "yes") }})
	req := get(t, context.Background(), "")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.Header.Get("X-Mutated") != "yes" {
		t.Fatal("OnRequest did not run on the request")
	}
	if rt.Requests()[0].Header.Get("X-Mutated") != "" {
		t.Fatal("recorded header should be taken before OnRequest")
	}
	if rt.Requests()[0].Req != req {
		t.Fatal("recorded Req is not the request")
	}
}

func TestConcurrentUse(t *testing.T) {
	rt := fakert.Status(200, 503)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			resp, err := rt.RoundTrip(get(t, context.Background(), "x"))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			_ = rt.Requests()
		})
	}
	wg.Wait()
	if rt.Calls() != 50 || rt.OpenBodies() != 0 {
		t.Fatalf("got %d calls, %d open; want 50, 0", rt.Calls(), rt.OpenBodies())
	}
}
