package factory_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
)

func TestHandlerJSONHasCountsReloadsProbeAndNonDefaultKeys(t *testing.T) {
	cc := config.Default()
	cc.Retry.MaxRetries = 0
	cc.CircuitBreaker.Enabled, cc.CircuitBreaker.FailureThreshold, cc.CircuitBreaker.Cooldown = true, 1, time.Hour
	cc.Hedge.Enabled, cc.Hedge.Delay = true, 250*time.Millisecond
	cc.Auth.Host, cc.Auth.BearerToken = "billing.test", "tok-zzz"
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": cc}}
	r, err := factory.New(cfg, factory.Options{Base: fakert.Status(500), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for range 2 { // a failure opens the breaker; a rejection
		if resp, err := r.Get("billing").Get("http://billing.test/"); err == nil {
			resp.Body.Close()
		}
	}
	bad := cfg
	bad.Defaults.Retry.MaxRetries = -1
	if err := r.Apply(bad); err == nil {
		t.Fatal("the bad config applied")
	}

	rec := serve(r, http.MethodGet, "/s?format=json", "")
	if strings.Contains(rec.Body.String(), "tok-zzz") {
		t.Fatalf("the JSON holds the token:\n%s", rec.Body)
	}
	var doc struct {
		Clients []struct {
			Calls, Failures, Rejections uint64
			HedgeDelay                  *float64 `json:"hedge_delay_seconds"`
			Breaker                     struct {
				State   string   `json:"state"`
				ProbeIn *float64 `json:"probe_in_seconds"`
			} `json:"breaker"`
			NonDefault []struct {
				Key, Value, Default string
				Origin              *struct{ Layer string } `json:"origin"`
			} `json:"non_default"`
		} `json:"clients"`
		Reloads []struct {
			Time       time.Time `json:"time"`
			Generation uint64    `json:"generation"`
			Result     string    `json:"result"`
			Error      string    `json:"error"`
			Changed    []string  `json:"changed"`
		} `json:"reloads"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Clients[0]
	if c.Calls != 2 || c.Failures != 1 || c.Rejections != 1 {
		t.Errorf("calls, failures, rejections: got %d %d %d, want 2 1 1", c.Calls, c.Failures, c.Rejections)
	}
	if c.HedgeDelay == nil || *c.HedgeDelay != 0.25 {
		t.Errorf("hedge_delay_seconds: got %v, want 0.25", c.HedgeDelay)
	}
	if c.Breaker.State != "open" || c.Breaker.ProbeIn == nil || *c.Breaker.ProbeIn <= 0 || *c.Breaker.ProbeIn > 3600 {
		t.Errorf("breaker: got %q probe in %v, want open with a probe within the hour", c.Breaker.State, c.Breaker.ProbeIn)
	}
	keys := map[string]string{}
	for _, k := range c.NonDefault {
		keys[k.Key] = k.Value
		if k.Origin != nil {
			t.Errorf("%s has an origin, but a config built in code has no provenance", k.Key)
		}
	}
	if keys["hedge.delay"] != "250ms" || keys["auth.bearer_token"] != "REDACTED" || keys["circuit_breaker.failure_threshold"] != "1" {
		t.Errorf("non_default: got %v", keys)
	}
	if len(doc.Reloads) != 2 {
		t.Fatalf("reloads: got %d, want 2", len(doc.Reloads))
	}
	if r0 := doc.Reloads[0]; r0.Result != "rejected" || !strings.Contains(r0.Error, "max_retries") || r0.Generation != 1 || r0.Changed == nil || len(r0.Changed) != 0 {
		t.Errorf("reloads[0]: got %+v, want rejected, its error, generation 1, changed []", r0)
	}
	if r1 := doc.Reloads[1]; r1.Result != "applied" || r1.Error != "" || len(r1.Changed) != 1 || r1.Changed[0] != "billing" || r1.Time.IsZero() {
		t.Errorf("reloads[1]: got %+v, want the first load, applied, changed [billing]", r1)
	}
}

// Status's new fields cost the JSON nothing when there is nothing to say:
// a client with defaults lists no key and no hedge delay.
func TestHandlerJSONOmitsEmptyNewFields(t *testing.T) {
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"plain": config.Default()}},
		factory.Options{Base: fakert.Status(200), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	body := serve(r, http.MethodGet, "/s?format=json", "").Body.String()
	for _, absent := range []string{"non_default", "hedge_delay_seconds", "probe_in_seconds"} {
		if strings.Contains(body, absent) {
			t.Errorf("%s is shown for a client that has none", absent)
		}
	}
	if !strings.Contains(body, `"calls": 0`) || !strings.Contains(body, `"reloads": [`) {
		t.Errorf("calls or reloads missing:\n%s", body)
	}
}
