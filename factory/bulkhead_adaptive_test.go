package factory_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/eventrec"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// adaptiveYAML is a file with client billing's bulkhead block set to
// bulkhead, no retries.
func adaptiveYAML(bulkhead string) string {
	return "clients:\n  billing:\n    retry: {max_retries: 0}\n    bulkhead: " + bulkhead + "\n"
}

// learnVia sends n sequential calls through c; with one call in flight at
// a time the adaptive limit falls towards 5.
func learnVia(t *testing.T, c *http.Client, n int) {
	t.Helper()
	for range n {
		if err := getErr(c, "http://billing.test/v1/invoices"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdaptiveBulkheadReloadKeepsLearnedLimit: a reload that changes the
// adaptive keys retunes the bulkhead and keeps the learned limit, clamped
// to new bounds; a reload that switches the mode replaces it, and the
// adaptive one it switches back to starts at initial_limit.
func TestAdaptiveBulkheadReloadKeepsLearnedLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &eventrec.Recorder{}
		var plans [][]factory.ClientPlan
		r, path := openFile(t, adaptiveYAML("{mode: adaptive, min_limit: 1, max_limit: 200, initial_limit: 20}"), factory.Options{
			NoWatch: true, Logger: discard(), Observer: rec,
			Base:     fakert.New(fakert.Step{Delay: 20 * time.Millisecond}),
			OnReload: func(e factory.ReloadEvent) { plans = append(plans, e.Plan) },
		})
		learnVia(t, r.Get("billing"), 250)
		learned := statusOf(r.Status(), "billing")
		if learned.BulkheadMode != "adaptive" || learned.BulkheadLimit >= 18 {
			t.Fatalf("after 5s of calls one at a time: mode %q, limit %d; want adaptive, below 18", learned.BulkheadMode, learned.BulkheadLimit)
		}
		evs := rec.Named(middleware.EventBulkheadLimitChanged)
		if len(evs) == 0 || evs[0].Client != "billing" || evs[0].OldLimit != 20 {
			t.Fatalf("bulkhead.limit_changed events %+v, want the first from 20, client billing", evs)
		}

		reload := func(bulkhead string) factory.ClientStatus {
			t.Helper()
			atomicfile.Write(t, path, adaptiveYAML(bulkhead))
			if err := r.Reload(); err != nil {
				t.Fatalf("reload to %s: %v", bulkhead, err)
			}
			return statusOf(r.Status(), "billing")
		}
		bulkheadPlan := func() factory.ComponentPlan {
			for _, cp := range plans[len(plans)-1][0].Components {
				if cp.Component == factory.ComponentBulkhead {
					return cp
				}
			}
			t.Fatal("no bulkhead in the plan")
			return factory.ComponentPlan{}
		}

		if got := reload("{mode: adaptive, min_limit: 1, max_limit: 100, initial_limit: 30, max_wait: 1s}"); got.BulkheadLimit != learned.BulkheadLimit {
			t.Errorf("new max_limit 100: limit %d, want %d kept", got.BulkheadLimit, learned.BulkheadLimit)
		}
		if cp := bulkheadPlan(); cp.Change != factory.Retuned {
			t.Errorf("new adaptive keys: plan %+v, want retuned", cp)
		}
		if got := reload("{mode: adaptive, min_limit: 1, max_limit: 6, initial_limit: 6}"); got.BulkheadLimit != 6 {
			t.Errorf("max_limit 6: limit %d, want 6 (the learned %d clamped)", got.BulkheadLimit, learned.BulkheadLimit)
		}
		if got := reload("{mode: static, max_concurrent: 3}"); got.BulkheadLimit != 3 || got.BulkheadMode != "static" {
			t.Errorf("mode static: limit %d, mode %q; want 3, static", got.BulkheadLimit, got.BulkheadMode)
		}
		if cp := bulkheadPlan(); cp.Change != factory.Replaced || cp.Reason != "bulkhead.mode changed" {
			t.Errorf("switch of mode: plan %+v, want replaced: bulkhead.mode changed", cp)
		}
		if got := reload("{mode: adaptive, min_limit: 1, max_limit: 200, initial_limit: 20}"); got.BulkheadLimit != 20 {
			t.Errorf("back to adaptive: limit %d, want 20 (initial_limit: afresh)", got.BulkheadLimit)
		}
		if got := reload("{mode: static, max_concurrent: 0}"); got.BulkheadMode != "" || got.BulkheadLimit != 0 {
			t.Errorf("static, max_concurrent 0: mode %q, limit %d; want off", got.BulkheadMode, got.BulkheadLimit)
		}
		if cp := bulkheadPlan(); cp.Change != factory.Stopped || cp.Reason != "bulkhead.mode switched it off" {
			t.Errorf("adaptive to static 0: plan %+v, want stopped by bulkhead.mode", cp)
		}
	})
}

// TestAdaptiveBulkheadGroupSharesOneLimiter: clients naming one
// bulkhead.group share one adaptive limiter: its permits, its learned
// limit, its events (named by the group).
func TestAdaptiveBulkheadGroupSharesOneLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &eventrec.Recorder{}
		block := "{mode: adaptive, min_limit: 1, max_limit: 200, initial_limit: 20, group: vendor}"
		r, _ := openFile(t, "clients:\n  a:\n    retry: {max_retries: 0}\n    bulkhead: "+block+"\n  b:\n    retry: {max_retries: 0}\n    bulkhead: "+block+"\n",
			factory.Options{NoWatch: true, Logger: discard(), Observer: rec,
				Base: fakert.New(fakert.Step{Delay: 20 * time.Millisecond, Body: "x"})})
		learnVia(t, r.Get("a"), 250)
		sa, sb := statusOf(r.Status(), "a"), statusOf(r.Status(), "b")
		if sa.BulkheadLimit >= 18 || sb.BulkheadLimit != sa.BulkheadLimit {
			t.Fatalf("after a's calls: limits a %d, b %d; want one learned limit below 18", sa.BulkheadLimit, sb.BulkheadLimit)
		}
		if sb.Groups["bulkhead"] != "vendor" {
			t.Errorf("b's groups %v, want bulkhead: vendor", sb.Groups)
		}
		resp, err := r.Get("b").Get("http://billing.test/")
		if err != nil {
			t.Fatal(err)
		}
		if got := statusOf(r.Status(), "a").BulkheadInUse; got != 1 {
			t.Errorf("b's call in flight: a's in use %d, want 1", got)
		}
		resp.Body.Close()
		evs := rec.Named(middleware.EventBulkheadLimitChanged)
		if len(evs) == 0 || evs[0].Group != "vendor" {
			t.Errorf("bulkhead.limit_changed events %+v, want them named by group vendor", evs)
		}
	})
}

// TestAdaptiveBulkheadStatusJSON: the status endpoint's JSON shows an
// adaptive bulkhead's mode and learned limit.
func TestAdaptiveBulkheadStatusJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := openFile(t, adaptiveYAML("{mode: adaptive, min_limit: 2, max_limit: 50, initial_limit: 7}"),
			factory.Options{NoWatch: true, Logger: discard(), Base: fakert.New(fakert.Step{Body: "x"})})
		resp, err := r.Get("billing").Get("http://billing.test/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept", "application/json")
		r.Handler().ServeHTTP(w, req)
		var doc struct {
			Clients []struct {
				Name  string `json:"name"`
				InUse int    `json:"bulkhead_in_use"`
				Limit int    `json:"bulkhead_limit"`
				Mode  string `json:"bulkhead_mode"`
			} `json:"clients"`
		}
		if err := json.NewDecoder(w.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Clients) != 1 || doc.Clients[0].Mode != "adaptive" || doc.Clients[0].Limit != 7 || doc.Clients[0].InUse != 1 {
			t.Errorf("status JSON clients %+v, want billing adaptive, limit 7, 1 in use", doc.Clients)
		}
	})
}

// TestAdaptiveBulkheadRefusalIsRejection: a refusal of the adaptive
// bulkhead through a client is ErrBulkheadFull and counts as a rejection,
// not a failure.
func TestAdaptiveBulkheadRefusalIsRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := openFile(t, adaptiveYAML("{mode: adaptive, min_limit: 1, max_limit: 1, initial_limit: 1}"),
			factory.Options{NoWatch: true, Logger: discard(), Base: fakert.New(fakert.Step{Body: "x"})})
		c := r.Get("billing")
		resp, err := c.Get("http://billing.test/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := c.Get("http://billing.test/"); !errors.Is(err, middleware.ErrBulkheadFull) || !strings.Contains(err.Error(), "adaptive limit 1") {
			t.Fatalf("second call: err %v, want ErrBulkheadFull naming the adaptive limit", err)
		}
		if s := statusOf(r.Status(), "billing"); s.Rejections != 1 || s.Failures != 0 {
			t.Errorf("rejections %d, failures %d; want 1, 0", s.Rejections, s.Failures)
		}
	})
}

// TestAdaptiveBulkheadLoopbackSlowBackendLowersLimit: on loopback, 30
// callers against a server whose capacity drops from 100 to 2 concurrent
// requests (beyond it, latency grows with the queue): once the limiter
// has learned (its limit moved), the limit falls below its level at the
// drop. Real time: it polls with a deadline, no guessed waits.
func TestAdaptiveBulkheadLoopbackSlowBackendLowersLimit(t *testing.T) {
	var capacity, inflight atomic.Int64
	capacity.Store(100)
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		time.Sleep(20 * time.Millisecond * time.Duration(max(n, capacity.Load())) / time.Duration(capacity.Load()))
		w.Write([]byte("ok"))
	})
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	c := cfg.Clients["billing"]
	c.Retry.MaxRetries = 0
	c.Transport.MaxIdleConnsPerHost = 64
	c.Bulkhead = middleware.BulkheadSettings{Mode: middleware.BulkheadAdaptive, MinLimit: 1, MaxLimit: 200, InitialLimit: 20, MaxWait: time.Minute}
	cfg.Clients["billing"] = c
	r, err := factory.New(cfg, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	client := r.Get("billing")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get(srv.URL)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	limit := func() int { return statusOf(r.Status(), "billing").BulkheadLimit }

	// Healthy: wait until the limiter has closed a window (its limit
	// moved from initial_limit), so that it has a baseline.
	poll := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("limit %d after 30s, want %s", limit(), what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	poll("it moved from 20 (a window closed)", func() bool { return limit() != 20 })
	before := limit()
	capacity.Store(2)
	poll(fmt.Sprintf("below %d, its level before the backend slowed", before), func() bool { return limit() < before })
	t.Logf("limit %d before the backend slowed, %d now", before, limit())
}

// TestAdaptiveBulkheadMaxConcurrentWarns: max_concurrent beside mode
// adaptive, which does not read it, is a WARN at every load naming the
// key; a static client with it is not.
func TestAdaptiveBulkheadMaxConcurrentWarns(t *testing.T) {
	logger, logs := logcapture.New()
	openFile(t, "clients:\n  billing:\n    bulkhead: {mode: adaptive, max_concurrent: 10}\n  search:\n    bulkhead: {max_concurrent: 10}\n",
		factory.Options{NoWatch: true, Logger: logger})
	recs := logs.Records(t, "bulkhead.max_concurrent is set but mode adaptive does not read it: the limit is learned within [min_limit, max_limit]")
	if len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["client"] != "billing" || recs[0]["key"] != "clients.billing.bulkhead.max_concurrent" {
		t.Fatalf("got %v, want one WARN for client billing naming clients.billing.bulkhead.max_concurrent", recs)
	}
}
