package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScrape makes calls (503 then 200, so one retry), scrapes /metrics
// over loopback and parses it with Prometheus's own parser.
func TestScrape(t *testing.T) {
	n := 0
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer backend.Close()
	a, err := newApp()
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	resp, err := a.reg.Get("billing").Get(backend.URL + "/v1/invoices?token=s3cr3t")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	srv := httptest.NewServer(a.metrics)
	defer srv.Close()
	scrape, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer scrape.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(scrape.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range families {
		names = append(names, name)
	}
	slices.Sort(names)

	want := []struct {
		name   string
		typ    dto.MetricType
		labels map[string]string
	}{
		{"http_client_request_duration_seconds", dto.MetricType_HISTOGRAM, map[string]string{
			"switchboard_client": "billing", "http_request_method": "GET", "server_address": "127.0.0.1", "http_response_status_code": "503", "error_type": "503"}},
		{"http_client_request_duration_seconds", dto.MetricType_HISTOGRAM, map[string]string{
			"switchboard_client": "billing", "http_request_method": "GET", "http_response_status_code": "200"}},
		{"switchboard_call_duration_seconds", dto.MetricType_HISTOGRAM, map[string]string{
			"switchboard_client": "billing", "http_response_status_code": "200"}},
		{"switchboard_events_total", dto.MetricType_COUNTER, map[string]string{
			"event_name": "retry.attempt", "switchboard_client": "billing"}},
		{"switchboard_circuit_breaker_state", dto.MetricType_GAUGE, map[string]string{
			"switchboard_client": "billing", "switchboard_circuit_breaker_state": "closed"}},
		{"switchboard_bulkhead_in_use", dto.MetricType_GAUGE, map[string]string{"switchboard_client": "billing"}},
		{"switchboard_bulkhead_limit", dto.MetricType_GAUGE, map[string]string{"switchboard_client": "billing"}},
		{"switchboard_retry_budget_balance", dto.MetricType_GAUGE, map[string]string{"switchboard_client": "billing"}},
		{"switchboard_config_generation", dto.MetricType_GAUGE, nil},
	}
	for _, w := range want {
		f, ok := families[w.name]
		if !ok {
			t.Errorf("no family %s in %v", w.name, names)
			continue
		}
		if f.GetType() != w.typ {
			t.Errorf("%s: type %v, want %v", w.name, f.GetType(), w.typ)
		}
		if !slices.ContainsFunc(f.GetMetric(), func(m *dto.Metric) bool { return hasLabels(m, w.labels) }) {
			t.Errorf("%s: no series with labels %v", w.name, w.labels)
		}
	}
	if f := families["switchboard_circuit_breaker_state"]; f != nil {
		for _, m := range f.GetMetric() {
			if hasLabels(m, map[string]string{"switchboard_circuit_breaker_state": "closed"}) && m.GetGauge().GetValue() != 1 {
				t.Errorf("breaker closed = %v, want 1", m.GetGauge().GetValue())
			}
		}
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "s3cr3t") || strings.Contains(l.GetValue(), "/v1/") {
					t.Errorf("%s: label %s=%q holds a path or a secret", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
