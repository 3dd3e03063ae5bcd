package factory_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/logcapture"
)

// open returns how many connections the server has open now.
func (s *server) open() int64 { return s.newConns.Load() - s.closed.Load() }

// waitOpen polls, with a deadline, until at most want connections are open.
func (s *server) waitOpen(t *testing.T, want int64, what string) {
	t.Helper()
	deadline := time.Now().Add(reloadDeadline)
	for s.open() > want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %d connections open (%d opened, %d closed), want at most %d",
				what, s.open(), s.newConns.Load(), s.closed.Load(), want)
		}
		time.Sleep(5 * time.Millisecond) // polling an event with a deadline
	}
}

// withIdleTimeout returns cfg with billing's transport.idle_conn_timeout set
// to d: a transport change, so applying it replaces billing's transport.
func withIdleTimeout(cfg config.Config, d time.Duration) config.Config {
	c := cfg.Clients["billing"]
	c.Transport.IdleConnTimeout = d
	out := config.Config{Defaults: cfg.Defaults, Clients: map[string]config.ClientConfig{"billing": c}}
	return out
}

func TestReload100TransportChangesUnderLoadLeaveNoConnections(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})
	ignore := goleak.IgnoreCurrent() // the server's goroutines
	cfg := defaultsWithRetries(0)
	r, err := factory.New(withIdleTimeout(cfg, time.Minute), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	billing := r.Get("billing")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	var firstErr atomic.Value
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := billing.Get(srv.URL)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				requests.Add(1)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	for i := 1; i <= 100; i++ {
		if err := r.Apply(withIdleTimeout(cfg, time.Minute+time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		if i%10 == 0 { // let requests run on each transport
			for n := requests.Load(); requests.Load() < n+8; {
				time.Sleep(time.Millisecond) // polling an event
			}
		}
	}
	close(stop)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed across 100 transport reloads; first: %v", n, requests.Load(), firstErr.Load())
	}
	// The serving transport pools a connection per worker; one more
	// transport change retires it too. One request on the new transport:
	// its connection stays pooled, every retired transport's closes.
	if err := r.Apply(withIdleTimeout(cfg, time.Hour)); err != nil {
		t.Fatal(err)
	}
	get(t, billing, srv.URL)
	srv.waitOpen(t, 1, fmt.Sprintf("after 100 transport reloads and %d requests", requests.Load()))
	t.Logf("%d requests, %d connections opened in all", requests.Load(), srv.newConns.Load())

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	srv.waitOpen(t, 0, "after Close")
	goleak.VerifyNone(t, ignore)
}

// TestReloadDrainWaitsForInFlightThenGrace retires a transport while a
// response body is still open: nothing is cut, the grace period passes with
// a WARN, and the connection closes once the body is closed.
func TestReloadDrainWaitsForInFlightThenGrace(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush() // headers out: the client's Get returns
		<-release
		io.WriteString(w, "done")
	})
	var logs logcapture.Capture
	cfg := defaultsWithRetries(0)
	r, err := factory.New(withIdleTimeout(cfg, time.Minute), factory.Options{
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
		DrainGrace: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	billing := r.Get("billing")
	resp, err := billing.Get(srv.URL) // in flight until its body is read
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(withIdleTimeout(cfg, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(reloadDeadline)
	for !strings.Contains(logs.String(), "drain grace period") {
		if time.Now().After(deadline) {
			t.Fatalf("no WARN after the grace period; logs:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond) // polling an event with a deadline
	}
	if !strings.Contains(logs.String(), "in_flight=1") {
		t.Fatalf("the WARN does not say one request is in flight:\n%s", logs.String())
	}
	if n := srv.open(); n != 1 {
		t.Fatalf("the request in flight lost its connection: got %d open, want 1", n)
	}
	close(release)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "done" {
		t.Fatalf("body of the request that outlived the grace period: got %q, %v; want %q", b, err, "done")
	}
	srv.waitOpen(t, 0, "after the last request on the retired transport ended")
}

// TestReloadDrainTimerStoppedByClose retires a transport with a request in
// flight and a long grace period, then closes the registry: no timer or
// goroutine is left, and the request still completes.
func TestReloadDrainTimerStoppedByClose(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "done")
	})
	ignore := goleak.IgnoreCurrent()
	cfg := defaultsWithRetries(0)
	r, err := factory.New(withIdleTimeout(cfg, time.Minute), factory.Options{Logger: discard(), DrainGrace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Get("billing").Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(withIdleTimeout(cfg, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	close(release)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "done" {
		t.Fatalf("body after Close: got %q, %v; want %q", b, err, "done")
	}
	srv.waitOpen(t, 0, "after Close and the last request")
	goleak.VerifyNone(t, ignore)
}
