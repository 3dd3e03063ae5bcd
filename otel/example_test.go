package otelswitchboard_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

// Example wires the adapter into a registry: New (the global providers
// and propagator unless Options names others), Instrument before the
// registry is built, Register once it is.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider()
	defer mp.Shutdown(context.Background())
	defer tp.Shutdown(context.Background())
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("traceparent sent:", r.Header.Get("Traceparent") != "")
	}))
	defer backend.Close()

	tel, err := otelswitchboard.New(otelswitchboard.Options{
		MeterProvider:  mp,                         // nil: otel.GetMeterProvider()
		TracerProvider: tp,                         // nil: otel.GetTracerProvider()
		Propagator:     propagation.TraceContext{}, // nil: otel.GetTextMapPropagator()
	})
	if err != nil {
		log.Fatal(err)
	}
	opts := factory.Options{NoWatch: true} // e.g. File: "clients.yaml", with factory.Open
	tel.Instrument(&opts)                  // Observer, HooksFor (Outer, Attempt)
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	reg, err := factory.New(cfg, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	unregister, err := tel.Register(reg) // gauges from reg.Status()
	if err != nil {
		log.Fatal(err)
	}
	defer unregister()

	resp, err := reg.Get("billing").Get(backend.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
			client, _ := h.DataPoints[0].Attributes.Value("switchboard.client")
			fmt.Printf("%s: %d, client %s\n", m.Name, h.DataPoints[0].Count, client.AsString())
		}
	}
	// Output:
	// traceparent sent: true
	// http.client.request.duration: 1, client billing
	// switchboard.call.duration: 1, client billing
}

// Example_open wires the adapter into a registry opened from a file, as a
// service does: Instrument the options before Open, Register the registry
// after. docs/observability.md shows these lines. Compiled, not run: there
// is no clients.yaml here.
func Example_open() {
	mp := sdkmetric.NewMeterProvider() // yours, with its exporter
	tp := sdktrace.NewTracerProvider()
	tel, err := otelswitchboard.New(otelswitchboard.Options{
		MeterProvider:  mp,                         // nil: otel.GetMeterProvider()
		TracerProvider: tp,                         // nil: otel.GetTracerProvider()
		Propagator:     propagation.TraceContext{}, // nil: otel.GetTextMapPropagator()
	})
	if err != nil {
		log.Fatal(err)
	}
	opts := factory.Options{File: "clients.yaml", EnvPrefix: "SWITCHBOARD_"}
	tel.Instrument(&opts) // Observer, HooksFor (Outer, Attempt)
	clients, err := factory.Open(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
	unregister, err := tel.Register(clients) // gauges from clients.Status()
	if err != nil {
		log.Fatal(err)
	}
	defer unregister()
	_ = clients.Get("billing")
}
