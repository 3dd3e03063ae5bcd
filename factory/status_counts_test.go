package factory_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestStatusCountsCallsByOutcomeAcrossReloads(t *testing.T) {
	cc := config.Default()
	cc.Retry.MaxRetries = 0
	cc.CircuitBreaker.Enabled, cc.CircuitBreaker.FailureThreshold, cc.CircuitBreaker.Cooldown = true, 2, time.Hour
	base := fakert.Status(200, 404, 500, 503)
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": cc}},
		factory.Options{Base: base, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c := r.Get("billing")
	call := func() {
		resp, err := c.Get("http://billing.test/")
		if err == nil {
			resp.Body.Close()
		}
	}
	for range 4 { // 200, 404 (a success), 500, 503: the breaker opens
		call()
	}
	call() // rejected by the open breaker

	want := [3]uint64{5, 2, 1}
	got := clientStatus(t, r, "billing")
	if g := [3]uint64{got.Calls, got.Failures, got.Rejections}; g != want {
		t.Fatalf("calls, failures, rejections: got %v, want %v", g, want)
	}

	// A reload that rebuilds the client keeps its counts.
	cc.Timeout = 7 * time.Second
	if err := r.Apply(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": cc}}); err != nil {
		t.Fatal(err)
	}
	call() // still rejected: the breaker kept its state
	got = clientStatus(t, r, "billing")
	if g := [3]uint64{got.Calls, got.Failures, got.Rejections}; g != [3]uint64{6, 2, 2} {
		t.Fatalf("after a reload: got %v, want [6 2 2]", g)
	}
}

func TestStatusCountsACallerGoneCallAsNeitherFailureNorRejection(t *testing.T) {
	r, err := factory.New(config.Config{Defaults: config.Default()}, factory.Options{
		Base: middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return nil, req.Context().Err()
		}), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x.test/", nil)
	if _, err := r.Get("x").Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	got := clientStatus(t, r, "x")
	if g := [3]uint64{got.Calls, got.Failures, got.Rejections}; g != [3]uint64{1, 0, 0} {
		t.Fatalf("calls, failures, rejections: got %v, want [1 0 0]", g)
	}
}

func TestStatusReloadsKeepsTheLast20NewestFirst(t *testing.T) {
	cfg := func(timeout time.Duration) config.Config {
		cc := config.Default()
		cc.Timeout = timeout
		return config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"a": cc, "b": config.Default()}}
	}
	r, err := factory.New(cfg(time.Second), factory.Options{Base: fakert.Status(200), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	first := r.Status().Reloads
	if len(first) != 1 || first[0].Generation != 1 || first[0].Err != nil || !reflect.DeepEqual(first[0].Changed, []string{"a", "b"}) {
		t.Fatalf("after New: got %+v, want the first load, applied, both clients", first)
	}
	bad := cfg(time.Second)
	bad.Defaults.Retry.MaxRetries = -1
	if err := r.Apply(bad); err == nil {
		t.Fatal("Apply of an invalid config succeeded")
	}
	rs := r.Status().Reloads
	if len(rs) != 2 || rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), "max_retries") || rs[0].Generation != 1 || rs[0].Changed != nil {
		t.Fatalf("after a rejected Apply: got %+v, want it first, rejected, generation 1", rs)
	}
	for i := range 25 {
		if err := r.Apply(cfg(time.Duration(i+2) * time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	rs = r.Status().Reloads
	if len(rs) != factory.MaxReloadRecords {
		t.Fatalf("got %d records, want %d", len(rs), factory.MaxReloadRecords)
	}
	for i, rec := range rs {
		if want := uint64(26 - i); rec.Generation != want || rec.Err != nil || !reflect.DeepEqual(rec.Changed, []string{"a"}) {
			t.Fatalf("record %d: got %+v, want generation %d, applied, changed [a]", i, rec, want)
		}
		if i > 0 && rec.Time.After(rs[i-1].Time) {
			t.Fatalf("record %d is newer than record %d", i, i-1)
		}
	}
}

func TestStatusNonDefaultKeysWithProvenance(t *testing.T) {
	t.Setenv("SBTEST_CLIENTS__BILLING__RETRY__MAX_RETRIES", "7")
	r, file := openFile(t, `defaults:
  timeout: 9s
clients:
  billing:
    headers: {X-Api-Key: hdr-zzz}
    auth: {host: billing.test, bearer_token: tok-zzz}
    hedge: {enabled: true, delay: 150ms}
`, factory.Options{EnvPrefix: "SBTEST_", NoWatch: true, Base: fakert.Status(200), Logger: discard()})
	got := map[string]factory.ConfigKey{}
	for _, k := range clientStatus(t, r, "billing").NonDefault {
		got[k.Key] = k
	}
	want := map[string]factory.ConfigKey{
		"timeout":           {Key: "timeout", Value: "9s", Default: "30s", Known: true, Origin: config.Origin{Layer: config.LayerFile, Name: file, Line: 2, Path: "defaults.timeout"}},
		"headers.X-Api-Key": {Key: "headers.X-Api-Key", Value: middleware.Redacted, Known: true, Origin: config.Origin{Layer: config.LayerFile, Name: file, Line: 5, Path: "clients.billing.headers.X-Api-Key"}},
		"auth.bearer_token": {Key: "auth.bearer_token", Value: middleware.Redacted, Default: `""`, Known: true, Origin: config.Origin{Layer: config.LayerFile, Name: file, Line: 6, Path: "clients.billing.auth.bearer_token"}},
		"retry.max_retries": {Key: "retry.max_retries", Value: "7", Default: "3", Known: true, Origin: config.Origin{Layer: config.LayerEnv, Name: "SBTEST_CLIENTS__BILLING__RETRY__MAX_RETRIES", Path: "clients.billing.retry.max_retries"}},
	}
	for key, w := range want {
		if g := got[key]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s: got %+v, want %+v", key, g, w)
		}
	}
	if _, ok := got["retry.max_backoff"]; ok {
		t.Errorf("retry.max_backoff, at its default, is listed")
	}
	if s := fmt.Sprintf("%+v", r.Status()); strings.Contains(s, "zzz") {
		t.Errorf("a secret in Status: %s", s)
	}
	if d := clientStatus(t, r, "billing").HedgeDelay; d != 150*time.Millisecond {
		t.Errorf("HedgeDelay: got %v, want 150ms", d)
	}
}

func TestStatusNonDefaultWithoutProvenance(t *testing.T) {
	cc := config.Default()
	cc.Timeout = 9 * time.Second
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"a": cc}}, factory.Options{Base: fakert.Status(200), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	got := clientStatus(t, r, "a").NonDefault
	want := []factory.ConfigKey{{Key: "timeout", Value: "9s", Default: "30s"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
