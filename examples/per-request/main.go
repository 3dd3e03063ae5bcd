// Command per-request shows per-call overrides: the billing client retries
// every method (retry_all_methods, since its API takes idempotency keys),
// but a payment POST must never be sent twice, so that one call turns
// retries off with middleware.WithOverrides, next to a GET that retries as
// configured. An in-process server on 127.0.0.1 fails the first attempt of
// everything with 503.
//
//	go run ./examples/per-request
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "per-request:", err)
		os.Exit(1)
	}
}

// run is the whole demo; main only picks the output and the exit code.
func run(out io.Writer) error {
	var mu sync.Mutex
	attempts := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		mu.Lock()
		attempts[key]++
		n := attempts[key]
		mu.Unlock()
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "%s done", key)
	}))
	defer srv.Close()

	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{}}
	billing := config.Default()
	billing.Retry.RetryAllMethods = true // POST and PATCH too
	billing.Retry.InitialBackoff, billing.Retry.MaxBackoff = time.Millisecond, 5*time.Millisecond
	cfg.Clients["billing"] = billing

	reg, err := factory.New(cfg, factory.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer reg.Close()
	client := reg.Get("billing")

	// A GET follows the config: retried after the 503.
	get, err := http.NewRequest(http.MethodGet, srv.URL+"/invoices/42", nil)
	if err != nil {
		return err
	}
	if err := call(out, client, get); err != nil {
		return err
	}

	// The payment: no retry for this call only, and a tighter deadline.
	zero, deadline := 0, 2*time.Second
	ctx := middleware.WithOverrides(context.Background(), middleware.Overrides{
		MaxRetries: &zero,
		Timeout:    &deadline,
	})
	pay, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/payments", strings.NewReader(`{"amount": 4200}`))
	if err != nil {
		return err
	}
	if err := call(out, client, pay); err != nil {
		return err
	}

	// Another POST without overrides is retried, as configured.
	post, err := http.NewRequest(http.MethodPost, srv.URL+"/refunds", strings.NewReader(`{"amount": 100}`))
	if err != nil {
		return err
	}
	if err := call(out, client, post); err != nil {
		return err
	}

	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"GET /invoices/42", "POST /payments", "POST /refunds"} {
		fmt.Fprintf(out, "server: %-16s %d attempt(s)\n", k, attempts[k])
	}
	return nil
}

// call sends req and prints the outcome.
func call(out io.Writer, c *http.Client, req *http.Request) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%-4s %-14s -> %s %q\n", req.Method, req.URL.Path, resp.Status, strings.TrimSpace(string(body)))
	return nil
}
