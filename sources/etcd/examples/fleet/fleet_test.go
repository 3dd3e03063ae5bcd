package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/sources/etcd/internal/etcdtest"
	"github.com/switchboard-http/switchboard/sources/etcd/internal/fleetproc"
)

// TestFleetOnOneEtcdKey runs three members, separate OS processes with
// their own file and env, on one key of a real etcd, and puts to it as
// ops would. Every wait is on a member's report or bounded by a deadline.
func TestFleetOnOneEtcdKey(t *testing.T) {
	bin := buildFleet(t)
	dir := t.TempDir()
	srv, err := etcdtest.Start(filepath.Join(dir, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	cli, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	put := func(value string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		if _, err := etcdtest.Put(ctx, cli, key, value); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	backend := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(backend.Close)

	put(shared(2))
	var fleet []*fleetproc.Process
	for i, name := range []string{"a", "b", "c"} {
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, []byte(local("5s")), 0o600); err != nil {
			t.Fatal(err)
		}
		env := append(environ(), fmt.Sprintf("SWITCHBOARD_CLIENTS__BILLING__RATE_LIMIT__REQUESTS_PER_SECOND=%d", 10*(i+1)))
		p, err := fleetproc.Start(name, bin, []string{"member", "-name", name, "-file", file, "-endpoint", srv.Endpoint(),
			"-key", key, "-read-timeout", "500ms", "-target", backend.URL}, env, limit)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.Stop(); err != nil {
				t.Error(err)
			}
		})
		fleet = append(fleet, p)
	}
	// waitAll waits until every member reports ok, failing on a report
	// bad says is wrong; it returns each member's report.
	waitAll := func(what string, ok, bad func(fleetproc.Report) bool) []fleetproc.Report {
		t.Helper()
		var out []fleetproc.Report
		for _, p := range fleet {
			r, err := p.WaitFor(limit, func(r fleetproc.Report) bool {
				if bad != nil && bad(r) {
					t.Fatalf("%s: %s: unexpected report %+v", p.Name, what, r)
				}
				return ok(r)
			})
			if err != nil {
				t.Fatalf("%s: %v\nstderr: %s", what, err, p.Stderr())
			}
			out = append(out, r)
		}
		return out
	}
	rejected := func(r fleetproc.Report) bool { return r.Event == "rejected" }
	applied := func(maxRetries int) func(fleetproc.Report) bool {
		return func(r fleetproc.Report) bool { return r.Event == "applied" && r.MaxRetries == maxRetries }
	}

	// Initial load: etcd over the file, env over both; provenance names
	// the source and its key.
	for i, p := range fleet {
		r := p.Ready
		want := map[string]string{
			"retry.max_retries":              "source etcd:/switchboard/clients.yaml",
			"timeout":                        "file " + p.Name + ".yaml:3",
			"rate_limit.requests_per_second": "env SWITCHBOARD_CLIENTS__BILLING__RATE_LIMIT__REQUESTS_PER_SECOND",
		}
		if r.MaxRetries != 2 || r.Timeout != "5s" || r.RPS != float64(10*(i+1)) {
			t.Fatalf("%s ready: got %+v, want max_retries 2 (etcd), timeout 5s (file), rps %d (env)", p.Name, r, 10*(i+1))
		}
		for k, v := range want {
			if r.Provenance[k] != v {
				t.Errorf("%s: provenance of %s: got %q, want %q", p.Name, k, r.Provenance[k], v)
			}
		}
	}

	// 20 puts, one at a time, each applied by all three.
	var lat []time.Duration
	for v := 10; v < 30; v++ {
		start := time.Now()
		put(shared(v))
		for _, r := range waitAll("put", applied(v), rejected) {
			lat = append(lat, r.At.Sub(start))
		}
	}
	slices.Sort(lat)
	p50, p99 := lat[(len(lat)-1)/2], lat[(len(lat)*99+99)/100-1]
	t.Logf("put → applied over 20 puts × 3 processes: p50 %v, p99 %v, min %v, max %v (debounce 100ms)",
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))

	// Bad puts: each rejected by all three, which keep the last good
	// config and say why, naming the etcd key, in Status().LastError.
	gen := make([]uint64, len(fleet))
	for i, p := range fleet {
		st, err := p.Status()
		if err != nil {
			t.Fatal(err)
		}
		gen[i] = st.Generation
	}
	for _, bad := range []struct{ doc, want string }{
		{"clients:\n  billing:\n    retry: {max_retires: 3}\n", "source etcd:/switchboard/clients.yaml: clients.billing.retry.max_retires: unknown key; did you mean max_retries?"},
		{"clients:\n  billing:\n    retry: {max_retries: lots}\n", "clients.billing.retry.max_retries"},
		{"clients:\n  billing: [\n", "etcd key /switchboard/clients.yaml (revision "},
	} {
		put(bad.doc)
		for i, r := range waitAll("bad put", rejected, func(r fleetproc.Report) bool { return r.Event == "applied" }) {
			p := fleet[i]
			if r.MaxRetries != 29 || !strings.Contains(r.Error, bad.want) {
				t.Errorf("%s: got %+v, want max_retries 29 kept and an error containing %q", p.Name, r, bad.want)
			}
			st, err := p.Status()
			if err != nil {
				t.Fatal(err)
			}
			if st.Generation != gen[i] || !strings.Contains(st.LastError, bad.want) || !strings.Contains(st.LastError, "etcd") {
				t.Errorf("%s: status: got generation %d, last_error %q; want generation %d and the error naming the etcd key", p.Name, st.Generation, st.LastError, gen[i])
			}
		}
	}

	// etcd stopped: all keep serving; a file edit applies over etcd's
	// last good snapshot, and Status marks the source stale.
	srv.Stop()
	for _, p := range fleet {
		if got, err := p.Call(); err != nil || got != "200 OK" {
			t.Fatalf("%s with etcd down: call got %q, %v; want 200 OK", p.Name, got, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(local("6s")), 0o600); err != nil {
		t.Fatal(err)
	}
	a := fleet[0]
	r, err := a.WaitFor(limit, func(r fleetproc.Report) bool { return r.Event == "applied" && r.Timeout == "6s" })
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxRetries != 29 {
		t.Fatalf("a after its file edit with etcd down: got max_retries %d, want 29 (etcd's last good snapshot)", r.MaxRetries)
	}
	for i, p := range fleet {
		if i > 0 { // the others reload on demand: the read fails, the snapshot serves
			if msg, err := p.Reload(); err != nil || msg != "" {
				t.Fatalf("%s: Reload with etcd down: got %q, %v; want it applied from the snapshot", p.Name, msg, err)
			}
		}
		st, err := p.Status()
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Sources) != 1 || !st.Sources[0].Stale || st.Sources[0].Name != "etcd:/switchboard/clients.yaml" ||
			!strings.Contains(st.Sources[0].LastError, "etcd key /switchboard/clients.yaml") {
			t.Fatalf("%s: status sources with etcd down: got %+v, want etcd:/switchboard/clients.yaml stale, naming the key", p.Name, st.Sources)
		}
	}

	// etcd restarted, same data and port: the next put applies everywhere
	// without restarting a process.
	start := time.Now()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	ready := time.Now()
	// The put comes from a fresh client, as from etcdctl: the test's own
	// client would first wait out gRPC's reconnect backoff.
	ops, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ops.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	_, err = etcdtest.Put(ctx, ops, key, shared(40))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	putDone := time.Now()
	var worst time.Duration
	for _, r := range waitAll("put after restart", applied(40), rejected) {
		worst = max(worst, r.At.Sub(start))
	}
	t.Logf("etcd restart → put applied by all three: %v (etcd's start took %v of it, the put %v)",
		worst.Round(time.Millisecond), ready.Sub(start).Round(time.Millisecond), putDone.Sub(ready).Round(time.Millisecond))
	for _, p := range fleet {
		if st, err := p.Status(); err != nil || st.Sources[0].Stale {
			t.Fatalf("%s after restart: got sources %+v, %v; want not stale", p.Name, st.Sources, err)
		}
	}

	// A burst of 20 puts within 100ms, one started every 3ms without
	// waiting for the one before (one after another, each waits for etcd's
	// fsync, and 20 take longer than 100ms here), from the client that
	// reached etcd after its restart: the value of the put etcd committed
	// last is what every member ends on.
	type result struct {
		rev int64
		v   int
		err error
	}
	results := make(chan result, 20)
	tick := time.NewTicker(3 * time.Millisecond)
	start = time.Now()
	for v := 100; v < 120; v++ {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			rev, err := etcdtest.Put(ctx, ops, key, shared(v))
			results <- result{rev, v, err}
		}()
		if v < 119 {
			<-tick.C
		}
	}
	tick.Stop()
	issued := time.Since(start)
	last := result{}
	for range 20 {
		r := <-results
		if r.err != nil {
			t.Fatalf("burst put %d: %v", r.v, r.err)
		}
		if r.rev > last.rev {
			last = r
		}
	}
	committed := time.Since(start)
	waitAll("burst", applied(last.v), rejected)
	t.Logf("burst: 20 puts issued in %v, committed in %v; the last one (max_retries %d) applied by all three %v after the first put",
		issued.Round(time.Millisecond), committed.Round(time.Millisecond), last.v, time.Since(start).Round(time.Millisecond))
	if issued > 100*time.Millisecond {
		t.Logf("note: this machine took %v to issue the 20 puts, more than the 100ms meant", issued)
	}
}
