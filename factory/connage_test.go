package factory_test

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	nhttptrace "net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// ageServer is a loopback server that checks each request's protocol.
func newAgeServer(t *testing.T, h2 bool) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h2 && r.ProtoMajor != 2 {
			t.Errorf("request over HTTP/%d, want HTTP/2", r.ProtoMajor)
		}
	}))
	if h2 {
		s.EnableHTTP2 = true
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// connLog records, on the client side, when each connection (by local
// address) was first handed to a request and when every later request got
// it. The first hand-out is after the dial, so an age measured from it is
// never longer than the connection's real age.
type connLog struct {
	mu    sync.Mutex
	first map[string]time.Time
	got   map[string][]time.Time
}

func (l *connLog) trace(ctx context.Context) context.Context {
	return nhttptrace.WithClientTrace(ctx, &nhttptrace.ClientTrace{GotConn: func(info nhttptrace.GotConnInfo) {
		now, addr := time.Now(), info.Conn.LocalAddr().String()
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := l.first[addr]; !ok {
			l.first[addr] = now
		}
		l.got[addr] = append(l.got[addr], now)
	}})
}

// overAge returns the most requests one connection got after its age had
// passed, and how many connections there were.
func (l *connLog) overAge(age time.Duration) (worst, conns int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for addr, times := range l.got {
		n := 0
		for _, at := range times {
			if at.Sub(l.first[addr]) > age {
				n++
			}
		}
		worst = max(worst, n)
	}
	return worst, len(l.got)
}

// caFile writes the server's certificate as a PEM file for tls.ca_file.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	cert := srv.TLS.Certificates[0].Certificate[0]
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Go keeps a keep-alive connection forever; with max_conn_age no
// connection serves more than one request once its age has passed, over
// HTTP/1.1 and HTTP/2, so a client rebalances over a run of requests
// longer than the age.
func TestMaxConnAgeRotatesConnections(t *testing.T) {
	for _, tt := range []struct {
		h2   bool
		body bool // a POST with a body: net/http copies such a request before it gets a connection
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		h2 := tt.h2
		name := "HTTP/1.1"
		if h2 {
			name = "HTTP/2"
		}
		if tt.body {
			name += " POST"
		}
		t.Run(name, func(t *testing.T) {
			srv := newAgeServer(t, h2)
			c := config.Default()
			c.Retry.MaxRetries = 0
			const age = 150 * time.Millisecond
			c.Transport.MaxConnAge = age
			if h2 {
				c.TLS.CAFile = caFile(t, srv)
			}
			r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"svc": c}}, factory.Options{Logger: discard()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			client := r.Get("svc")
			log := &connLog{first: map[string]time.Time{}, got: map[string][]time.Time{}}
			// Requests until a few ages have passed and several connections
			// served, bounded: a loaded machine sends fewer per age.
			minEnd, deadline := time.Now().Add(5*age), time.Now().Add(10*time.Second)
			for i := 0; i < 20000 && time.Now().Before(deadline); i++ {
				if _, conns := log.overAge(age); conns >= 3 && time.Now().After(minEnd) {
					break
				}
				method, body := http.MethodGet, io.Reader(nil)
				if tt.body {
					method, body = http.MethodPost, strings.NewReader("x")
				}
				req, _ := http.NewRequestWithContext(log.trace(context.Background()), method, srv.URL, body)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if h2 && resp.ProtoMajor != 2 {
					t.Fatalf("response over HTTP/%d, want HTTP/2", resp.ProtoMajor)
				}
				resp.Body.Close()
			}
			worst, conns := log.overAge(age)
			if worst > 1 {
				t.Errorf("a connection served %d requests past its age, want at most 1", worst)
			}
			if conns < 3 {
				t.Errorf("connections over 5 ages: got %d, want at least 3", conns)
			}
		})
	}
}

// A reload that changes only max_conn_age keeps the transport and its warm
// connection, and the new age applies to the next request.
func TestMaxConnAgeRetunesWithoutANewTransport(t *testing.T) {
	srv := newServer(t, status(200))
	c := config.Default()
	c.Transport.MaxConnAge = time.Hour
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"svc": c}}
	events := newReloads()
	r, err := factory.New(cfg, factory.Options{Logger: discard(), OnReload: events.on})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	get(t, r.Get("svc"), srv.URL)

	c.Transport.MaxConnAge = 2 * time.Hour
	cfg.Clients = map[string]config.ClientConfig{"svc": c}
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if got := (<-events).Plan[0].Component(factory.ComponentTransport); got != factory.Retuned {
		t.Fatalf("transport after a max_conn_age change: got %s, want retuned", got)
	}
	get(t, r.Get("svc"), srv.URL)
	if n := srv.newConns.Load(); n != 1 {
		t.Fatalf("connections after the retune: got %d, want 1 (the warm one kept)", n)
	}

	// A tiny age now applies on the kept transport: the old connection
	// serves one last request, then a new one is dialed.
	c.Transport.MaxConnAge = time.Nanosecond
	cfg.Clients = map[string]config.ClientConfig{"svc": c}
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	get(t, r.Get("svc"), srv.URL)
	get(t, r.Get("svc"), srv.URL)
	if n := srv.newConns.Load(); n != 2 {
		t.Fatalf("connections after max_conn_age 1ns: got %d, want 2", n)
	}

	// Switched off (0s), the next calls keep their connection again.
	get(t, r.Get("svc"), srv.URL) // the last call of the 1ns connection
	c.Transport.MaxConnAge = 0
	cfg.Clients = map[string]config.ClientConfig{"svc": c}
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	before := srv.newConns.Load()
	for range 5 {
		get(t, r.Get("svc"), srv.URL)
	}
	if n := srv.newConns.Load() - before; n > 1 {
		t.Fatalf("connections for 5 calls after max_conn_age 0: got %d new, want at most 1", n)
	}
}
