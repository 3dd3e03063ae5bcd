package factory_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// flaky is an in-memory downstream: it answers 503 to every other request.
func flaky() http.RoundTripper {
	var n atomic.Int64
	return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		code, body := http.StatusOK, "ok"
		if n.Add(1)%2 == 1 {
			code, body = http.StatusServiceUnavailable, "busy"
		}
		return &http.Response{
			StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req,
		}, nil
	})
}

// New builds a registry from a Config made in code; Options.Base replaces
// the network with an in-memory transport here. The 503 is retried.
func ExampleNew() {
	billing := config.Default()
	billing.Retry.MaxRetries = 2
	billing.Retry.InitialBackoff = 0
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": billing}}

	reg, err := factory.New(cfg, factory.Options{Base: flaky(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()

	resp, err := reg.Get("billing").Get("http://billing.internal/v1/invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, reg.Names())
	// Output: 200 OK [billing]
}

// Get hands out the same *http.Client for a name on every call, for the
// registry's life, so callers may keep it; a name the config does not
// define follows `defaults`, and Lookup tells the two apart.
func ExampleRegistry_Get() {
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	reg, err := factory.New(cfg, factory.Options{Base: flaky(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()

	a, b := reg.Get("billing"), reg.Get("billing")
	fmt.Println("same client:", a == b)
	_, defined := reg.Lookup("search")
	fmt.Println("search defined:", defined, "client:", reg.Get("search") != nil)

	// A reload changes what the kept client does, not the pointer.
	tuned := config.Default()
	tuned.Retry.MaxRetries = 0
	if err := reg.Apply(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": tuned}}); err != nil {
		fmt.Println(err)
		return
	}
	resp, err := a.Get("http://billing.internal/")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("after reload, same client:", reg.Get("billing") == a, "status:", resp.Status)
	// Output:
	// same client: true
	// search defined: false client: true
	// after reload, same client: true status: 503 Service Unavailable
}

// Plan tells, without building anything, what Apply would do: here the
// breaker is retuned in place (an open breaker would stay open) and the
// transport, with its warm connections, is kept.
func ExamplePlan() {
	old := config.Default()
	old.CircuitBreaker.Enabled = true
	tuned := old
	tuned.CircuitBreaker.FailureThreshold = 10
	tuned.Transport.MaxRedirects = 10 // unchanged value

	plans := factory.Plan(
		config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": old}},
		config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": tuned, "search": config.Default()}},
	)
	for _, p := range plans {
		fmt.Println(p.Name, p.Action, p.Keys)
		fmt.Println("  breaker:", p.Component(factory.ComponentBreaker), "transport:", p.Component(factory.ComponentTransport))
	}
	// Output:
	// billing changed [{circuit_breaker.failure_threshold 5 10 false}]
	//   breaker: retuned transport: unchanged
	// search added []
	//   breaker: off transport: started
}
