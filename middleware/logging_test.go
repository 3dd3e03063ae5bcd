package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestLoggingOneRecordPerAttempt(t *testing.T) {
	logger, logs := logcapture.New()
	ev := &middleware.Events{Client: "billing", Logger: logger}
	s := fixedSettings()
	s.InitialBackoff, s.MaxBackoff = 0, 0
	rt := fakert.New(
		fakert.Step{Status: 503, Body: "body-secret"},
		fakert.Step{Err: fmt.Errorf("dial http://svc.test/v1/items?token=s3cr3t&page=2: %w", errors.ErrUnsupported)},
		fakert.Step{Status: 200},
	)
	c := &http.Client{Transport: middleware.Chain(
		middleware.Retry(s, middleware.RetryOptions{}),
		middleware.Headers(map[string]string{"X-Api-Key": "hdr-secret"}, middleware.HeadersOptions{}),
		middleware.Logging(middleware.LoggingSettings{Level: middleware.LogInfo}, middleware.LoggingOptions{Events: ev}),
	)(rt)}
	req := newReq(t, context.Background(), http.MethodGet, "")
	req.URL.User = nil
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)

	recs := logs.Records(t, "http attempt")
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3 (one per attempt):\n%s", len(recs), logs)
	}
	wantURL := "http://svc.test/v1/items?token=REDACTED&page=2"
	for i, r := range recs {
		if r["level"] != "INFO" || r["client"] != "billing" || r["method"] != "GET" || r["url"] != wantURL {
			t.Errorf("record %d: got %v, want INFO, client, method and redacted url", i, r)
		}
		if r["attempt"] != float64(i+1) {
			t.Errorf("record %d: got attempt %v, want %d", i, r["attempt"], i+1)
		}
		if _, ok := r["duration"]; !ok {
			t.Errorf("record %d: no duration", i)
		}
	}
	if recs[0]["status"] != float64(503) || recs[2]["status"] != float64(200) {
		t.Errorf("got statuses %v and %v, want 503 and 200", recs[0]["status"], recs[2]["status"])
	}
	if e, _ := recs[1]["error"].(string); !strings.Contains(e, wantURL) {
		t.Errorf("got error %q, want it with the redacted URL", e)
	}
	for _, secret := range []string{"s3cr3t", "hdr-secret", "body-secret", "X-Api-Key"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
}

func TestLoggingLevels(t *testing.T) {
	// Nothing to log: the identity, never a nil Middleware.
	next := fakert.New()
	for name, o := range map[string]struct {
		s middleware.LoggingSettings
		o middleware.LoggingOptions
	}{
		"level off":  {middleware.LoggingSettings{Level: middleware.LogOff}, middleware.LoggingOptions{Events: &middleware.Events{Logger: slog.Default()}}},
		"no logger":  {middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: &middleware.Events{}}},
		"nil events": {middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{}},
	} {
		mw := middleware.Logging(o.s, o.o)
		if mw == nil {
			t.Fatalf("%s: got a nil Middleware, want the identity", name)
		}
		if got := mw(next); got != http.RoundTripper(next) {
			t.Errorf("%s: got a layer %T, want next itself", name, got)
		}
	}
	logger, logs := logcapture.New()
	rt := middleware.Logging(middleware.LoggingSettings{Level: ""}, middleware.LoggingOptions{Events: &middleware.Events{Logger: logger}})(fakert.New())
	resp, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if recs := logs.Records(t, "http attempt"); len(recs) != 1 || recs[0]["level"] != "DEBUG" {
		t.Fatalf("level \"\": got %v, want one DEBUG record", recs)
	}
}

func TestLoggingDisabledLevelAddsNoAllocation(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(discardWriter{}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	logged := middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: &middleware.Events{Logger: logger}})(prebuilt())
	bare := prebuilt()
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/?token=x", nil)
	n := testing.AllocsPerRun(100, func() { logged.RoundTrip(req) })
	m := testing.AllocsPerRun(100, func() { bare.RoundTrip(req) })
	if n != m {
		t.Fatalf("got %v allocs/op, want %v (the bare transport's)", n, m)
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestAttemptFrom(t *testing.T) {
	if got := middleware.AttemptFrom(context.Background()); got != 1 {
		t.Fatalf("unmarked context: got %d, want 1", got)
	}
	var seen []int
	rt := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		seen = append(seen, middleware.AttemptFrom(req.Context()))
		return &http.Response{StatusCode: 503, Body: http.NoBody}, nil
	})
	s := fixedSettings()
	s.InitialBackoff, s.MaxBackoff = 0, 0
	resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if fmt.Sprint(seen) != "[1 2 3 4]" {
		t.Fatalf("got attempts %v, want [1 2 3 4]", seen)
	}
}
