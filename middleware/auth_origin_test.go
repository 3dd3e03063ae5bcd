package middleware_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestAuthOriginIgnoresCaseAndDefaultPorts(t *testing.T) {
	tests := []struct {
		authHost string
		url      string
		want     bool
	}{
		{"api.example.com:443", "https://api.example.com/v1", true},
		{"api.example.com:443", "https://api.example.com:443/v1", true},
		{"api.example.com", "https://api.example.com:443/v1", true},
		{"api.example.com", "https://api.example.com/v1", true},
		{"api.example.com", "http://api.example.com/v1", true},
		{"api.example.com", "http://api.example.com:80/v1", true},
		{"api.example.com:80", "http://api.example.com/v1", true},
		{"API.Example.COM", "https://api.example.com/v1", true},
		{"api.example.com:8443", "https://API.EXAMPLE.com:8443/v1", true},
		{"api.example.com:8443", "http://api.example.com:8443/v1", true},
		{"[::1]:8443", "https://[::1]:8443/v1", true},
		{"[::1]", "https://[::1]/v1", true},
		{"api.example.com:443", "http://api.example.com/v1", false},
		{"api.example.com:80", "https://api.example.com/v1", false},
		{"api.example.com", "https://api.example.com:8443/v1", false},
		{"api.example.com", "http://api.example.com:443/v1", false},
		{"api.example.com:8443", "https://api.example.com/v1", false},
		{"api.example.com", "https://x.api.example.com/v1", false},
		{"api.example.com", "https://evilapi.example.com/v1", false},
		{"api.example.com", "https://api.example.com.evil.test/v1", false},
		{"api.example.com", "https://api.example.com./v1", false},
		{"api.example.com", "ftp://api.example.com/v1", false},
		{"https://api.example.com", "https://api.example.com/v1", false}, // not a bare host: fails closed
	}
	for _, tt := range tests {
		t.Run(tt.authHost+" "+tt.url, func(t *testing.T) {
			rt := fakert.New()
			auth := middleware.Auth(middleware.AuthSettings{Host: tt.authHost}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok"}})(rt)
			req, err := http.NewRequest(http.MethodGet, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := auth.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := rt.Requests()[0].Header.Get("Authorization") != ""
			if got != tt.want {
				t.Fatalf("got credential sent %v, want %v", got, tt.want)
			}
		})
	}
}

// redirectOf returns the request http.Client makes to follow a redirect to
// u from prev, linked through Response as client.go does; with a nil prev,
// the call's first request.
func redirectOf(t *testing.T, prev *http.Request, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prev != nil {
		req.Response = &http.Response{StatusCode: http.StatusFound, Request: prev}
	}
	return req
}

func TestAuthSchemeIsPinnedByTheCallsFirstRequestToHost(t *testing.T) {
	tests := []struct {
		name  string
		chain []string // the hops, first to last; the last one is checked
		want  bool
	}{
		{"plain http call", []string{"http://h.test/"}, true},
		{"https to https", []string{"https://h.test/a", "https://h.test/b"}, true},
		{"http to http", []string{"http://h.test/a", "http://h.test/b"}, true},
		{"https to http downgrade", []string{"https://h.test/a", "http://h.test/b"}, false},
		{"https to http with explicit ports", []string{"https://h.test:443/a", "http://h.test:80/b"}, false},
		{"http to https change", []string{"http://h.test/a", "https://h.test/b"}, false},
		{"downgrade through another host", []string{"https://h.test/a", "https://other.test/", "http://h.test/b"}, false},
		{"other host first, then h over http", []string{"https://other.test/", "http://h.test/b"}, true},
		{"other host first, then h over https", []string{"http://other.test/", "https://h.test/b"}, true},
		{"back to the first scheme", []string{"https://h.test/a", "https://h.test/b", "https://h.test/c"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := fakert.New()
			auth := middleware.Auth(middleware.AuthSettings{Host: "h.test"}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok"}})(rt)
			var req *http.Request
			for _, u := range tt.chain {
				req = redirectOf(t, req, u)
			}
			chain := strings.Join(tt.chain, " -> ")
			resp, err := auth.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := rt.Requests()[0].Header.Get("Authorization") != ""
			if got != tt.want {
				t.Fatalf("%s: got credential sent %v, want %v", chain, got, tt.want)
			}
		})
	}
}

func TestAuthRedirectWithUnknownOriginGetsNoCredential(t *testing.T) {
	rt := fakert.New()
	auth := middleware.Auth(middleware.AuthSettings{Host: "h.test"}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok"}})(rt)
	req, _ := http.NewRequest(http.MethodGet, "https://h.test/", nil)
	req.Response = &http.Response{StatusCode: http.StatusFound} // no Request
	resp, err := auth.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := rt.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Fatalf("got Authorization %q, want none", got)
	}
}

// TestAuthSchemeDowngradeRedirectGetsNoCredential follows a real redirect
// from https://127.0.0.1:port/ to http://127.0.0.1:port/: one listener
// serves both, so host and port stay the same and only the scheme changes.
func TestAuthSchemeDowngradeRedirectGetsNoCredential(t *testing.T) {
	tlsSide, plainSide := sniffListener(t)
	var mu sync.Mutex
	seen := map[string][]string{}
	record := func(side string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen[side+" "+r.URL.Path] = append(seen[side+" "+r.URL.Path], r.Header.Get("Authorization"))
	}
	addr := tlsSide.Addr().String()
	secure := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("tls", r)
		switch r.URL.Path {
		case "/down":
			http.Redirect(w, r, "http://"+addr+"/landing", http.StatusFound)
		case "/same":
			http.Redirect(w, r, "/landing", http.StatusFound)
		}
	}))
	secure.Listener = tlsSide
	secure.StartTLS()
	t.Cleanup(secure.Close)
	plain := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("plain", r)
		if r.URL.Path == "/up" {
			http.Redirect(w, r, "https://"+addr+"/landing", http.StatusFound)
		}
	}))
	plain.Listener = plainSide
	plain.Start()
	t.Cleanup(plain.Close)

	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = secure.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	t.Cleanup(base.CloseIdleConnections)
	logger, logs := logcapture.New()
	ev := &middleware.Events{Client: "billing", Logger: logger}
	c := &http.Client{Transport: middleware.Auth(middleware.AuthSettings{Host: addr}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok-secret"}, Events: ev})(base)}
	for _, u := range []string{"https://" + addr + "/down", "https://" + addr + "/same", "http://" + addr + "/direct", "http://" + addr + "/up"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	mu.Lock()
	defer mu.Unlock()
	want := map[string][]string{
		"tls /down":      {"Bearer tok-secret"},
		"plain /landing": {""}, // the downgrade: no credential
		"tls /same":      {"Bearer tok-secret"},
		"tls /landing":   {"Bearer tok-secret", ""}, // after /same; after /up (a scheme change too)
		"plain /direct":  {"Bearer tok-secret"},     // auth.host names no scheme
		"plain /up":      {"Bearer tok-secret"},
	}
	for k, w := range want {
		if got := seen[k]; strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("%s: got Authorization %q, want %q", k, got, w)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("got requests %v, want %v", seen, want)
	}
	warns := logs.Records(t, "credential withheld: redirect changed the scheme")
	if len(warns) != 2 {
		t.Fatalf("got %d scheme WARNs, want 2 (https>http, http>https):\n%s", len(warns), logs)
	}
	if w := warns[0]; w["level"] != "WARN" || w["auth_host"] != addr || w["host"] != addr || w["from_scheme"] != "https" || w["scheme"] != "http" {
		t.Fatalf("got record %v, want a WARN naming auth_host, host and both schemes", w)
	}
	if strings.Contains(logs.String(), "tok-secret") {
		t.Fatal("a log record holds the credential")
	}
}

// sniffListener listens on one loopback port and hands each connection to
// the TLS side when its first byte is a TLS handshake record (0x16), to the
// plain side otherwise. Both sides report the one address.
func sniffListener(t *testing.T) (tlsSide, plainSide net.Listener) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts, ps := newSideListener(inner.Addr()), newSideListener(inner.Addr())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := inner.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				br := bufio.NewReader(conn)
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				b, err := br.Peek(1)
				conn.SetReadDeadline(time.Time{})
				if err != nil {
					conn.Close()
					return
				}
				side := ps
				if b[0] == 0x16 {
					side = ts
				}
				side.hand(&peekedConn{Conn: conn, r: br})
			})
		}
	})
	t.Cleanup(func() {
		inner.Close()
		wg.Wait()
	})
	return ts, ps
}

// peekedConn is a connection whose first bytes sit in r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// sideListener is a net.Listener fed by sniffListener.
type sideListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newSideListener(addr net.Addr) *sideListener {
	return &sideListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *sideListener) hand(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *sideListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *sideListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *sideListener) Addr() net.Addr { return l.addr }
