package middleware_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestClassify(t *testing.T) {
	alive := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	status := func(code int) *http.Response { return &http.Response{StatusCode: code, Body: http.NoBody} }
	cut := fmt.Errorf("switchboard: %w (max_concurrent 1, waited 1s): a deadline ended the wait: %w", middleware.ErrBulkheadFull, context.DeadlineExceeded)
	tests := []struct {
		name string
		ctx  context.Context
		resp *http.Response
		err  error
		want middleware.Outcome
	}{
		{"200", alive, status(200), nil, middleware.OutcomeSuccess},
		{"429 is an answer", alive, status(429), nil, middleware.OutcomeSuccess},
		{"404 is an answer", alive, status(404), nil, middleware.OutcomeSuccess},
		{"503", alive, status(503), nil, middleware.OutcomeFailure},
		{"an injected abort's 503", alive, status(middleware.DefaultFaultAbortStatus), nil, middleware.OutcomeFailure},
		{"a response after the caller left is an answer", cancelled, status(200), nil, middleware.OutcomeSuccess},
		{"neither response nor error", alive, nil, nil, middleware.OutcomeFailure},
		{"breaker rejection", alive, nil, &middleware.CircuitOpenError{RetryIn: time.Second}, middleware.OutcomeRejected},
		{"adaptive rejection", alive, nil, &middleware.CircuitOpenError{Probability: 0.3}, middleware.OutcomeRejected},
		{"rejection through *url.Error", alive, nil, &url.Error{Op: "Get", URL: "http://x", Err: &middleware.CircuitOpenError{}}, middleware.OutcomeRejected},
		{"bulkhead full", alive, nil, fmt.Errorf("x: %w", middleware.ErrBulkheadFull), middleware.OutcomeRejected},
		{"bulkhead wait cut by a deadline", expired, nil, cut, middleware.OutcomeRejected},
		{"bulkhead wait cut, under the Timeout layer's error", alive, nil, &middleware.TimeoutError{Limit: time.Second, Err: cut}, middleware.OutcomeRejected},
		{"rate limited", alive, nil, fmt.Errorf("x: %w", middleware.ErrRateLimited), middleware.OutcomeRejected},
		{"fault injected", alive, nil, middleware.ErrFaultInjected, middleware.OutcomeFailure},
		{"transport error", alive, nil, errors.New("connection reset by peer"), middleware.OutcomeFailure},
		{"attempt timeout", alive, nil, &middleware.TimeoutError{Limit: time.Second, PerAttempt: true, Err: context.DeadlineExceeded}, middleware.OutcomeFailure},
		{"caller cancelled", cancelled, nil, context.Canceled, middleware.OutcomeCallerGone},
		{"caller's own deadline", expired, nil, context.DeadlineExceeded, middleware.OutcomeCallerGone},
		{"caller gone before permanent", cancelled, nil, x509.UnknownAuthorityError{}, middleware.OutcomeCallerGone},
		{"TLS verification", alive, nil, x509.UnknownAuthorityError{}, middleware.OutcomePermanent},
		{"bad scheme", alive, nil, errors.New(`unsupported protocol scheme "ftp"`), middleware.OutcomePermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(tt.ctx, http.MethodGet, "http://svc.test/", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := middleware.Classify(req, tt.resp, tt.err); got != tt.want {
				t.Fatalf("Classify = %v, want %v", got, tt.want)
			}
		})
	}
}

// A deadline of the Timeout or AttemptTimeout layer is not the caller's: a
// call it ends is a backend failure, seen from any layer below it.
func TestClassifyOwnDeadlineIsAFailure(t *testing.T) {
	for _, layer := range []struct {
		name string
		mw   middleware.Middleware
	}{
		{"timeout", middleware.Timeout(time.Second, middleware.TimeoutOptions{})},
		{"attempt_timeout", middleware.AttemptTimeout(time.Second, middleware.TimeoutOptions{})},
	} {
		t.Run(layer.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got middleware.Outcome
				hang := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
					<-req.Context().Done()
					err := req.Context().Err()
					got = middleware.Classify(req, nil, err)
					return nil, err
				})
				if _, err := layer.mw(hang).RoundTrip(newReq(t, context.Background(), http.MethodGet, "")); err == nil {
					t.Fatal("got no error, want the layer's timeout")
				}
				if got != middleware.OutcomeFailure {
					t.Fatalf("Classify below the %s layer after its deadline = %v, want failure", layer.name, got)
				}
			})
		})
	}
}

func TestRejection(t *testing.T) {
	tests := []struct {
		err  error
		want error
	}{
		{nil, nil},
		{errors.New("other"), nil},
		{&middleware.CircuitOpenError{}, middleware.ErrCircuitOpen},
		{fmt.Errorf("a: %w", middleware.ErrBulkheadFull), middleware.ErrBulkheadFull},
		{fmt.Errorf("a: %w: %w", middleware.ErrRateLimited, context.DeadlineExceeded), middleware.ErrRateLimited},
	}
	for _, tt := range tests {
		if got := middleware.Rejection(tt.err); got != tt.want {
			t.Errorf("Rejection(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	want := map[middleware.Outcome]string{
		middleware.OutcomeSuccess:    "success",
		middleware.OutcomeFailure:    "failure",
		middleware.OutcomeRejected:   "rejected",
		middleware.OutcomeCallerGone: "caller_gone",
		middleware.OutcomePermanent:  "permanent",
		middleware.Outcome(99):       "unknown",
	}
	for o, s := range want {
		if got := o.String(); got != s {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, s)
		}
	}
}
