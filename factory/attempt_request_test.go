package factory_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/factory"
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
