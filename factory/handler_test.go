package factory_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestHandlerServesStatusAndRedactedConfig(t *testing.T) {
	d := config.Default()
	billing := config.Default()
	billing.Timeout = 5 * time.Second
	billing.Headers = map[string]string{"User-Agent": "billing-svc/1.4", "X-Api-Key": "hdr-zzz"}
	billing.Transport.ProxyURL = "http://proxyuser:proxy-zzz@proxy.test:3128"
	billing.Auth = middleware.AuthSettings{Host: "billing.test", BearerToken: "tok-zzz", Basic: middleware.BasicAuth{Username: "svc", Password: "pw-zzz"}}
	billing.Retry.Budget.TTL = 0 // no budget: an infinite balance
	billing.RateLimit = middleware.RateLimitSettings{RequestsPerSecond: 5, Burst: 2}
	billing.CircuitBreaker.Enabled = true
	billing.Bulkhead.MaxConcurrent = 4
	r, err := factory.New(config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"billing": billing}},
		factory.Options{Base: okTransport, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	bad := config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"billing": billing}}
	bad.Defaults.Retry.MaxRetries = -1
	if err := r.Apply(bad); err == nil {
		t.Fatal("Apply of an invalid config succeeded")
	}

	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/switchboard", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %q, want 200 application/json", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	for _, secret := range []string{"tok-zzz", "pw-zzz", "hdr-zzz", "proxy-zzz", "proxyuser"} {
		if strings.Contains(body, secret) {
			t.Errorf("the status holds %q:\n%s", secret, body)
		}
	}
	var doc struct {
		Generation uint64    `json:"generation"`
		LastReload time.Time `json:"last_reload"`
		LastError  string    `json:"last_error"`
		Clients    []struct {
			Name          string   `json:"name"`
			Defined       bool     `json:"defined"`
			ConfigHash    string   `json:"config_hash"`
			BudgetBalance *float64 `json:"budget_balance"`
			Breaker       struct {
				State string            `json:"state"`
				Hosts map[string]string `json:"hosts"`
			} `json:"breaker"`
			BulkheadLimit int      `json:"bulkhead_limit"`
			LimiterTokens *float64 `json:"limiter_tokens"`
			Config        struct {
				Timeout   string            `json:"timeout"`
				Headers   map[string]string `json:"headers"`
				Transport struct {
					ProxyURL string `json:"proxy_url"`
				} `json:"transport"`
				Auth struct {
					Host        string `json:"host"`
					BearerToken string `json:"bearer_token"`
					Basic       struct {
						Username string `json:"username"`
						Password string `json:"password"`
					} `json:"basic"`
				} `json:"auth"`
				Retry struct {
					MaxRetries int    `json:"max_retries"`
					Jitter     string `json:"jitter"`
				} `json:"retry"`
			} `json:"config"`
		} `json:"clients"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("decode: %v\n%s", err, body)
	}
	if doc.Generation != 1 || doc.LastReload.IsZero() || !strings.Contains(doc.LastError, "defaults.retry.max_retries") {
		t.Fatalf("got generation %d, last reload %v, last error %q; want 1, a time, the rejection", doc.Generation, doc.LastReload, doc.LastError)
	}
	if len(doc.Clients) != 1 {
		t.Fatalf("got %d clients, want 1", len(doc.Clients))
	}
	c := doc.Clients[0]
	cfg := c.Config
	switch {
	case c.Name != "billing" || !c.Defined || len(c.ConfigHash) != 64:
		t.Errorf("got %s defined=%v hash=%q", c.Name, c.Defined, c.ConfigHash)
	case c.BudgetBalance != nil:
		t.Errorf("budget off: got balance %v, want null", *c.BudgetBalance)
	case c.LimiterTokens == nil || *c.LimiterTokens != 2:
		t.Errorf("got limiter tokens %v, want 2 (a full burst)", c.LimiterTokens)
	case c.Breaker.State != "closed" || c.Breaker.Hosts != nil || c.BulkheadLimit != 4:
		t.Errorf("got breaker %v, bulkhead limit %d", c.Breaker, c.BulkheadLimit)
	case cfg.Timeout != "5s" || cfg.Retry.MaxRetries != 3 || cfg.Retry.Jitter != "full":
		t.Errorf("got config timeout %q retry %+v", cfg.Timeout, cfg.Retry)
	case cfg.Auth.Host != "billing.test" || cfg.Auth.BearerToken != "REDACTED" || cfg.Auth.Basic.Password != "REDACTED" || cfg.Auth.Basic.Username != "svc":
		t.Errorf("got auth %+v, want the secrets REDACTED", cfg.Auth)
	case cfg.Headers["User-Agent"] != "billing-svc/1.4" || cfg.Headers["X-Api-Key"] != "REDACTED":
		t.Errorf("got headers %v, want X-Api-Key REDACTED", cfg.Headers)
	case cfg.Transport.ProxyURL != "http://REDACTED@proxy.test:3128":
		t.Errorf("got proxy_url %q, want its userinfo as REDACTED@", cfg.Transport.ProxyURL)
	}

	rec = httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/switchboard", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: got %d, want 405", rec.Code)
	}

	// Status encodes on its own too, infinite budget and all.
	if _, err := json.Marshal(r.Status()); err != nil {
		t.Fatalf("json.Marshal(Status()): %v", err)
	}
}
