package promswitchboard_test

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	promswitchboard "github.com/switchboard-http/switchboard/prometheus"
)

// TestRedirectedCallCountsOnce checks that a Do redirected once is one
// logical call in switchboard_calls_total and one observation of
// switchboard_call_duration_seconds, as in Status, though http.Client runs
// the pipeline twice.
func TestRedirectedCallCountsOnce(t *testing.T) {
	ft := fakert.New(
		fakert.Step{Status: http.StatusFound, Header: http.Header{"Location": {"/b"}}},
		fakert.Step{Status: http.StatusOK},
	)
	m := promswitchboard.NewMetrics(promswitchboard.Options{})
	opts := factory.Options{Base: ft, Logger: slog.New(slog.DiscardHandler)}
	m.Instrument(&opts)
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	preg := prometheus.NewPedanticRegistry()
	preg.MustRegister(m)
	call(t, r, "billing", "https://billing.internal/a")
	if n := ft.Calls(); n != 2 {
		t.Fatalf("transport saw %d requests, want 2 (a redirect and its hop)", n)
	}
	fams := scrape(t, preg)
	success := map[string]string{"client": "billing", "outcome": "success"}
	if v, _ := value(fams, "switchboard_calls_total", success); v != 1 {
		t.Errorf("switchboard_calls_total{outcome=success}: got %v, want 1", v)
	}
	var observed uint64
	for _, s := range fams["switchboard_call_duration_seconds"].GetMetric() {
		observed += s.GetHistogram().GetSampleCount()
	}
	if observed != 1 {
		t.Errorf("switchboard_call_duration_seconds: %d observations, want 1", observed)
	}
	if got := r.Status().Clients[0].Calls; got != 1 {
		t.Errorf("Status calls: got %d, want 1", got)
	}
}
