package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// Chain composes middleware, the first outermost: here the outer layer
// sees the request before the inner one, and the response after it.
func ExampleChain() {
	layer := func(name string) middleware.Middleware {
		return func(next http.RoundTripper) http.RoundTripper {
			return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				fmt.Println(name, "request")
				resp, err := next.RoundTrip(req)
				fmt.Println(name, "response")
				return resp, err
			})
		}
	}
	base := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		fmt.Println("base", req.Method, req.URL.Path)
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	})

	client := &http.Client{Transport: middleware.Chain(layer("outer"), layer("inner"))(base)}
	resp, err := client.Get("http://example.internal/v1")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// outer request
	// inner request
	// base GET /v1
	// inner response
	// outer response
}

// WithOverrides changes settings for the calls whose context carries it:
// a payment that must not be retried, with a tighter deadline, while the
// client's configuration stays as it is for every other call.
func ExampleWithOverrides() {
	zero, deadline := 0, 2*time.Second
	ctx := middleware.WithOverrides(context.Background(), middleware.Overrides{
		MaxRetries: &zero,
		Timeout:    &deadline,
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://billing.internal/payments", strings.NewReader("{}"))

	o, ok := middleware.OverridesFrom(req.Context())
	fmt.Println(ok, *o.MaxRetries, *o.Timeout, o.AttemptTimeout == nil)
	// Output: true 0 2s true
}

// An adaptive bulkhead learns its limit from the calls' latencies, within
// [MinLimit, MaxLimit] from InitialLimit. A retune that moves the bounds
// keeps the learned limit, clamped to them; a switch to mode static
// starts afresh.
func ExampleNewBulkhead_adaptive() {
	s := middleware.BulkheadSettings{
		Mode: middleware.BulkheadAdaptive, MinLimit: 2, MaxLimit: 50, InitialLimit: 10,
		MaxWait: 100 * time.Millisecond, // how long a call may queue for a slot
	}
	bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{})
	rt := bh.Middleware()(middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
	}))
	req, _ := http.NewRequest("GET", "http://billing.internal/v1/invoices", nil)
	resp, _ := rt.RoundTrip(req)
	fmt.Println(bh.Mode(), "limit", bh.Limit(), "in use", bh.InUse()) // the slot is held until the body ends
	resp.Body.Close()

	s.MaxLimit, s.InitialLimit = 8, 8
	bh.Update(s)
	fmt.Println(bh.Mode(), "limit", bh.Limit(), "in use", bh.InUse())

	bh.Update(middleware.BulkheadSettings{Mode: middleware.BulkheadStatic, MaxConcurrent: 4})
	fmt.Println(bh.Mode(), "limit", bh.Limit())
	// Output:
	// adaptive limit 10 in use 1
	// adaptive limit 8 in use 0
	// static limit 4
}

// Coalesce lets identical calls in flight share one trip: three callers
// ask while the backend is still answering the first, and the backend
// sees one request; each caller reads its own copy of the answer.
func ExampleCoalesce() {
	var requests atomic.Int32
	release := make(chan struct{})
	backend := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		requests.Add(1)
		<-release // still answering while the others arrive
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("report")), Request: req}, nil
	})
	joined := new(atomic.Uint64)
	s := middleware.DefaultCoalesceSettings()
	s.Enabled = true
	client := &http.Client{Transport: middleware.Coalesce(s, middleware.CoalesceOptions{Joined: joined})(backend)}

	var wg sync.WaitGroup
	bodies := make([]string, 3)
	for i := range bodies {
		wg.Go(func() {
			resp, err := client.Get("http://reports.internal/v1/daily")
			if err != nil {
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			bodies[i] = string(b)
		})
	}
	for joined.Load() < 2 { // until the two late callers have joined the first's trip
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	fmt.Println("backend requests:", requests.Load())
	fmt.Println("bodies:", bodies)
	// Output:
	// backend requests: 1
	// bodies: [report report report]
}

// FormatDeadline writes the time left as the deadline header carries it,
// rounded down; grpc picks the finest unit whose value fits in 8 digits.
func ExampleFormatDeadline() {
	left := 1999900 * time.Microsecond
	for _, f := range []middleware.DeadlineFormat{middleware.DeadlineMillis, middleware.DeadlineSeconds, middleware.DeadlineGRPC} {
		fmt.Println(f, middleware.FormatDeadline(left, f))
	}
	fmt.Println(middleware.FormatDeadline(150*time.Second, middleware.DeadlineGRPC))
	fmt.Println(middleware.FormatDeadline(-time.Second, middleware.DeadlineMillis)) // passed: 0, never negative
	// Output:
	// ms 1999
	// seconds 1
	// grpc 1999900u
	// 150000m
	// 0
}

// With idempotency keys on, a POST is retried like a GET, and every attempt
// of the call carries the same Idempotency-Key, so a server that keeps the
// keys it has seen runs it once.
func ExampleRetry_idempotencyKey() {
	var keys []string
	backend := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		keys = append(keys, req.Header.Get("Idempotency-Key"))
		status := http.StatusServiceUnavailable
		if len(keys) == 3 {
			status = http.StatusCreated
		}
		return &http.Response{StatusCode: status, Body: http.NoBody, Request: req}, nil
	})
	s := middleware.DefaultRetrySettings()
	s.InitialBackoff, s.MaxBackoff = time.Millisecond, time.Millisecond
	s.IdempotencyKey.Enabled = true // header Idempotency-Key, methods POST and PATCH
	client := &http.Client{Transport: middleware.Retry(s, middleware.RetryOptions{})(backend)}

	resp, err := client.Post("http://billing.test/v1/charges", "application/json", strings.NewReader(`{"amount":100}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, len(keys), "attempts")
	fmt.Println("one key:", keys[0] != "" && keys[0] == keys[1] && keys[1] == keys[2], len(keys[0]), "characters")
	// Output:
	// 201 3 attempts
	// one key: true 36 characters
}
