package otelswitchboard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

// BenchmarkRequest is one GET through a registry's client, without the
// adapter (off) and with it (on: real SDK providers, every span sampled
// and ended into a no-op exporter's batch, metrics aggregated by a
// ManualReader that nobody collects; on-unsampled: the same with a tracer
// that samples nothing), over an in-memory base and over loopback.
func BenchmarkRequest(b *testing.B) {
	ok := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	for _, bc := range []struct {
		name string
		base http.RoundTripper
		url  string
	}{
		{"memory", ok, "http://api.test/v1/items"},
		{"loopback", nil, srv.URL + "/v1/items"},
	} {
		for _, mode := range []string{"off", "on", "on-unsampled"} {
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				c := benchClient(b, bc.base, mode)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, bc.url, nil)
						resp, err := c.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			})
		}
	}
}

// benchClient returns the client "api" of a registry over base: mode off
// without the adapter, on with it, on-unsampled with it and a tracer that
// samples nothing (metrics and propagation only).
func benchClient(b *testing.B, base http.RoundTripper, mode string) *http.Client {
	d := config.Default()
	d.Logging.Level = middleware.LogOff
	cfg := config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"api": d}}
	o := factory.Options{Base: base, Logger: slog.New(slog.DiscardHandler)}
	var unregister func() error
	if mode != "off" {
		sampler := sdktrace.AlwaysSample()
		if mode == "on-unsampled" {
			sampler = sdktrace.NeverSample()
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sampler))
		b.Cleanup(func() {
			_ = tp.Shutdown(context.Background())
			_ = mp.Shutdown(context.Background())
		})
		tel, err := otelswitchboard.New(otelswitchboard.Options{MeterProvider: mp, TracerProvider: tp, Propagator: propagation.TraceContext{}})
		if err != nil {
			b.Fatal(err)
		}
		tel.Instrument(&o)
		defer func() {
			if unregister != nil {
				b.Cleanup(func() { _ = unregister() })
			}
		}()
		reg, err := factory.New(cfg, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { reg.Close() })
		if unregister, err = tel.Register(reg); err != nil {
			b.Fatal(err)
		}
		return reg.Get("api")
	}
	reg, err := factory.New(cfg, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	return reg.Get("api")
}

// discardExporter drops every span batch.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
