package factory_test

import (
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestAttemptsWithoutHooksLeaveCallersRequestAlone: a client without
// attempt middleware no longer clones every attempt, so what retry and
// hedging change for an attempt (the attempt header, a replayed body, the
// attempt's context) and what the headers layer adds must reach the server
// on every attempt and never the caller's request.
func TestAttemptsWithoutHooksLeaveCallersRequestAlone(t *testing.T) {
	for _, hedge := range []bool{false, true} {
		t.Run(map[bool]string{false: "retry", true: "hedge"}[hedge], func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen []string
			)
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				seen = append(seen, r.Header.Get("X-Attempt")+"|"+r.Header.Get("X-Static")+"|"+r.Header.Get("X-Caller")+"|"+string(b))
				n := len(seen)
				mu.Unlock()
				if n < 3 {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			})
			cfg := defaultsWithRetries(2)
			c := cfg.Clients["billing"]
			c.Retry.AttemptHeader = "X-Attempt"
			c.Headers = map[string]string{"X-Static": "s"}
			c.Hedge.Enabled, c.Hedge.Delay, c.Hedge.MaxHedges = hedge, time.Hour, 1
			cfg.Clients["billing"] = c
			r, err := factory.New(cfg, factory.Options{Logger: discard()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// A body without GetBody: retry and hedging buffer it and send
			// every attempt a copy of the buffer.
			req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v1?page=2", nil)
			req.Body, req.ContentLength = io.NopCloser(strings.NewReader("payload")), 7
			req.Header.Set("X-Caller", "c")
			resp, err := r.Get("billing").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200 on the third attempt", resp.StatusCode)
			}
			mu.Lock()
			got := slices.Clone(seen)
			mu.Unlock()
			if want := []string{"1|s|c|payload", "2|s|c|payload", "3|s|c|payload"}; !slices.Equal(got, want) {
				t.Errorf("attempts sent %q, want %q", got, want)
			}
			if len(req.Header) != 1 || req.Header.Get("X-Caller") != "c" || req.URL.RawQuery != "page=2" || req.GetBody != nil {
				t.Errorf("caller's request changed: %v %s (GetBody set: %v)", req.Header, req.URL, req.GetBody != nil)
			}
		})
	}
}

// TestBaseGetsAClonePerAttempt: Options.Base promises that each attempt it
// gets is a clone of its own, so a Base that writes to the request's
// header changes neither the caller's request nor another attempt, even
// while hedged copies run at once (a shared Header map is a race).
func TestBaseGetsAClonePerAttempt(t *testing.T) {
	for _, hedge := range []bool{false, true} {
		t.Run(map[bool]string{false: "retry", true: "hedge"}[hedge], func(t *testing.T) {
			cfg := defaultsWithRetries(2)
			c := cfg.Clients["billing"]
			c.Hedge.Enabled, c.Hedge.Delay, c.Hedge.MaxHedges = hedge, time.Millisecond, 1
			cfg.Clients["billing"] = c
			var (
				mu      sync.Mutex
				n       int
				headers []http.Header
			)
			base := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				req.Header.Set("X-Base", "touched") // allowed: a clone of its own
				mu.Lock()
				n++
				first := n == 1
				headers = append(headers, req.Header)
				mu.Unlock()
				if hedge && first {
					// Held until the hedge wins, so both copies hold their
					// request at once; then cancelled as the loser.
					<-req.Context().Done()
					return nil, req.Context().Err()
				}
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
			})
			r, err := factory.New(cfg, factory.Options{Logger: discard(), Base: base})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			req, _ := http.NewRequest(http.MethodGet, "http://billing.test/x", nil)
			req.Header.Set("X-Caller", "c")
			resp, err := r.Get("billing").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(req.Header) != 1 || req.Header.Get("X-Caller") != "c" {
				t.Errorf("caller's request changed by Base: %v", req.Header)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, h := range headers {
				if reflect.ValueOf(h).UnsafePointer() == reflect.ValueOf(req.Header).UnsafePointer() {
					t.Errorf("attempt %d got the caller's header map", i+1)
				}
				for j := range i {
					if reflect.ValueOf(h).UnsafePointer() == reflect.ValueOf(headers[j]).UnsafePointer() {
						t.Errorf("attempts %d and %d share a header map", j+1, i+1)
					}
				}
			}
		})
	}
}
