package otelswitchboard_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

// harness is a registry wired to the real SDK: a ManualReader for the
// metrics, a SpanRecorder for the spans.
type harness struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tel    *otelswitchboard.Telemetry
	reg    *factory.Registry
}

// newHarness builds a registry of cfg over base, instrumented and
// registered; everything is closed by t.Cleanup.
func newHarness(t *testing.T, cfg config.Config, base http.RoundTripper) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, base, harnessOptions{})
}

// harnessOptions change what newHarnessWith builds.
type harnessOptions struct {
	setup      func(*factory.Options)                             // before wiring
	wire       func(*otelswitchboard.Telemetry, *factory.Options) // instead of Instrument
	noRegister bool                                               // leave the registry unregistered
}

// newHarnessWith is newHarness changed by ho.
func newHarnessWith(t *testing.T, cfg config.Config, base http.RoundTripper, ho harnessOptions) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	tel, err := otelswitchboard.New(otelswitchboard.Options{
		MeterProvider: mp, TracerProvider: tp, Propagator: propagation.TraceContext{},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.tel = tel
	o := factory.Options{Base: base, Logger: slog.New(slog.DiscardHandler)}
	if ho.setup != nil {
		ho.setup(&o)
	}
	if ho.wire != nil {
		ho.wire(tel, &o)
	} else {
		tel.Instrument(&o)
	}
	reg, err := factory.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	h.reg = reg
	if !ho.noRegister {
		h.register(t)
	}
	return h
}

// register registers h's registry with its Telemetry, until t's cleanup.
func (h *harness) register(t *testing.T) {
	t.Helper()
	unregister, err := h.tel.Register(h.reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unregister() })
}

// baseConfig is defaults with fast retries and no headers, plus clients.
func baseConfig(clients map[string]func(c *config.ClientConfig)) config.Config {
	d := config.Default()
	d.Headers = map[string]string{}
	d.Retry.InitialBackoff, d.Retry.MaxBackoff = time.Millisecond, time.Millisecond
	d.Retry.Jitter = "none"
	cfg := config.Config{Defaults: d, Clients: map[string]config.ClientConfig{}}
	for name, f := range clients {
		c := d
		f(&c)
		cfg.Clients[name] = c
	}
	return cfg
}

// collect reads every metric once.
func (h *harness) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelswitchboard.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, otelswitchboard.ScopeName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// key spells an attribute set as "k=v,k=v", sorted by key.
func key(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// points returns the value of each point of m by its attributes: a
// histogram's count, a sum's or a gauge's value.
func points(t *testing.T, m metricdata.Metrics) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] = float64(p.Count)
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] = p.Value
		}
	case nil:
	default:
		t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
	}
	return out
}

// wantPoints checks that metric name has exactly want's points.
func wantPoints(t *testing.T, ms map[string]metricdata.Metrics, name string, want map[string]float64) {
	t.Helper()
	got := points(t, ms[name])
	if len(want) == 0 && len(got) == 0 {
		return
	}
	var diff []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			diff = append(diff, "missing "+k)
		} else if g != v {
			diff = append(diff, k+": got "+ftoa(g)+", want "+ftoa(v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, "unexpected "+k+" = "+ftoa(v))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		t.Errorf("%s:\n\t%s", name, strings.Join(diff, "\n\t"))
	}
}

func ftoa(f float64) string { return strings.TrimRight(strings.TrimRight(strconvF(f), "0"), ".") }

// attrs turns a span's or event's attributes into a map of their values
// as strings.
func attrs(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// get sends a GET through client and closes the body.
func get(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	return resp, err
}

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }

func itoa(i int) string { return strconv.Itoa(i) }
