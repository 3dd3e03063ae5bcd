// Command prometheus serves a switchboard registry's OpenTelemetry metrics
// on /metrics in Prometheus's text format, through the OpenTelemetry
// Prometheus exporter, as most teams scrape them. It talks to an
// in-process backend only:
//
//	go run ./examples/prometheus -addr 127.0.0.1:9464
//	curl -s 127.0.0.1:9464/metrics | grep switchboard
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "where to serve /metrics")
	flag.Parse()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/flaky" && time.Now().UnixNano()%2 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer backend.Close()
	a, err := newApp()
	if err != nil {
		log.Fatal(err)
	}
	defer a.close()
	for range 10 {
		if resp, err := a.reg.Get("billing").Get(backend.URL + "/flaky"); err == nil {
			resp.Body.Close()
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.metrics)
	log.Printf("serving %s/metrics", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// app is a registry whose telemetry is exported to a Prometheus registry.
type app struct {
	reg     *factory.Registry
	metrics http.Handler // /metrics
	close   func()
}

// newApp wires the adapter with the Prometheus exporter: one billing
// client with retries, a breaker and a bulkhead.
func newApp() (*app, error) {
	promReg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(promReg))
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	tel, err := otelswitchboard.New(otelswitchboard.Options{MeterProvider: mp})
	if err != nil {
		return nil, err
	}
	d := config.Default()
	d.Retry.InitialBackoff, d.Retry.MaxBackoff = time.Millisecond, 10*time.Millisecond
	billing := d
	billing.CircuitBreaker.Enabled = true
	billing.Bulkhead.MaxConcurrent = 8
	opts := factory.Options{NoWatch: true}
	tel.Instrument(&opts)
	reg, err := factory.New(config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"billing": billing}}, opts)
	if err != nil {
		return nil, err
	}
	unregister, err := tel.Register(reg)
	if err != nil {
		reg.Close()
		return nil, err
	}
	return &app{
		reg:     reg,
		metrics: promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}),
		close: func() {
			_ = unregister()
			reg.Close()
			_ = mp.Shutdown(context.Background())
		},
	}, nil
}
