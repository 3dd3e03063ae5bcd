// Command custom-middleware adds code-only behaviour to a switchboard
// client with factory.Hooks: an outer middleware that gives each logical
// call one request ID (the same on every retry), and an attempt middleware
// that numbers the attempts in a header. A flaky in-process server on
// 127.0.0.1 shows what each attempt carried.
//
//	go run ./examples/custom-middleware
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "custom-middleware:", err)
		os.Exit(1)
	}
}

// attemptsKey keys the per-call attempt counter in a request's context.
type attemptsKey struct{}

// requestID is the outer middleware: it sees each logical call once, so it
// sets X-Request-Id (unless the caller did) and an attempt counter that the
// attempt middleware below counts in. Like every layer it works on a clone
// and leaves the caller's request alone.
func requestID(next func() string) middleware.Middleware {
	return func(rt http.RoundTripper) http.RoundTripper {
		return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			ctx := context.WithValue(req.Context(), attemptsKey{}, new(atomic.Int32))
			r := req.Clone(ctx)
			if r.Header.Get("X-Request-Id") == "" {
				r.Header.Set("X-Request-Id", next())
			}
			return rt.RoundTrip(r)
		})
	}
}

// attemptNumber is the attempt middleware: it runs on every attempt, just
// inside the attempt timeout, and numbers them.
func attemptNumber(rt http.RoundTripper) http.RoundTripper {
	return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		n, _ := req.Context().Value(attemptsKey{}).(*atomic.Int32)
		if n == nil {
			return rt.RoundTrip(req)
		}
		r := req.Clone(req.Context())
		r.Header.Set("X-Attempt", strconv.Itoa(int(n.Add(1))))
		return rt.RoundTrip(r)
	})
}

// run is the whole demo; main only picks the output and the exit code.
func run(out io.Writer) error {
	// The server fails the first two attempts of every call with 503 and
	// records what each attempt carried.
	var mu sync.Mutex
	var seen []string
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		mu.Lock()
		tries[id]++
		n := tries[id]
		seen = append(seen, fmt.Sprintf("server saw X-Request-Id=%s X-Attempt=%s", id, r.Header.Get("X-Attempt")))
		mu.Unlock()
		if n < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	// The config, in code here; a file works the same way with factory.Open.
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{}}
	c := config.Default()
	c.Retry.InitialBackoff, c.Retry.MaxBackoff = time.Millisecond, 5*time.Millisecond
	cfg.Clients["orders"] = c

	var ids atomic.Int64
	reg, err := factory.New(cfg, factory.Options{
		Logger: quietLogger(),
		// Hooks apply to every client; ClientHooks["orders"] would be for one.
		Hooks: factory.Hooks{
			Outer:   []middleware.Middleware{requestID(func() string { return fmt.Sprintf("req-%d", ids.Add(1)) })},
			Attempt: []middleware.Middleware{attemptNumber},
		},
	})
	if err != nil {
		return err
	}
	defer reg.Close()

	orders := reg.Get("orders")
	for range 2 {
		resp, err := orders.Get(srv.URL + "/orders/42")
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Fprintf(out, "call done: %s\n", resp.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		fmt.Fprintln(out, s)
	}
	return nil
}
