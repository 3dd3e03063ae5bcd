package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestAuthSendsCredentialToPinnedHostOnly(t *testing.T) {
	bearer := middleware.Credential{Bearer: "tok-123"}
	basic := middleware.Credential{Username: "alice", Password: "pw"}
	tests := []struct {
		name string
		cred middleware.Credential
		url  string
		want string
	}{
		{"bearer to pinned host", bearer, "https://api.test:8443/v1", "Bearer tok-123"},
		{"basic to pinned host", basic, "https://api.test:8443/v1", "Basic YWxpY2U6cHc="},
		{"bearer wins over basic", middleware.Credential{Bearer: "b", Username: "u", Password: "p"}, "https://api.test:8443/", "Bearer b"},
		{"other host", bearer, "https://evil.test:8443/v1", ""},
		{"other port", bearer, "https://api.test:9443/v1", ""},
		{"no port", bearer, "https://api.test/v1", ""},
		{"other case", bearer, "https://API.test:8443/v1", "Bearer tok-123"},
		{"subdomain", bearer, "https://x.api.test:8443/v1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := fakert.New()
			auth := middleware.Auth(middleware.AuthSettings{Host: "api.test:8443"}, middleware.AuthOptions{Credential: tt.cred})(rt)
			req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
			resp, err := auth.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := rt.Requests()[0].Header.Get("Authorization"); got != tt.want {
				t.Fatalf("got Authorization %q, want %q", got, tt.want)
			}
			if req.Header.Get("Authorization") != "" {
				t.Fatal("the caller's request was changed")
			}
		})
	}
}

func TestAuthNeverOverwritesCallersAuthorization(t *testing.T) {
	rt := fakert.New()
	auth := middleware.Auth(middleware.AuthSettings{Host: "api.test"}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "ours"}})(rt)
	for _, u := range []string{"https://api.test/", "https://other.test/"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer callers")
		resp, err := auth.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for i, r := range rt.Requests() {
		if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer callers" {
			t.Fatalf("request %d: got Authorization %q, want the caller's only", i, got)
		}
	}
}

func TestAuthWithoutCredentialIsNoLayer(t *testing.T) {
	rt := fakert.New()
	if got := middleware.Auth(middleware.AuthSettings{Host: "api.test"}, middleware.AuthOptions{})(rt); got != http.RoundTripper(rt) {
		t.Fatal("got a layer for a zero credential, want the identity (next itself)")
	}
}

// Without a resolved credential in the options, the settings' own secret
// is sent.
func TestAuthSendsTheSettingsCredential(t *testing.T) {
	rt := fakert.New()
	auth := middleware.Auth(middleware.AuthSettings{Host: "svc.test", BearerToken: "tok"}, middleware.AuthOptions{})(rt)
	resp, err := auth.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := rt.Requests()[0].Header.Get("Authorization"); got != "Bearer tok" {
		t.Fatalf("Authorization: got %q, want Bearer tok", got)
	}
}

func TestAuthWarnsOncePerOtherHostBounded(t *testing.T) {
	logger, logs := logcapture.New()
	ev := &middleware.Events{Client: "billing", Logger: logger}
	auth := middleware.Auth(middleware.AuthSettings{Host: "api.test"}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok-secret"}, Events: ev})(fakert.New())
	send := func(host string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+host+"/", nil)
		resp, err := auth.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { send("other.test") })
	}
	wg.Wait()
	send("api.test")
	recs := logs.Records(t, "")
	if len(recs) != 1 {
		t.Fatalf("got %d records for one other host, want 1:\n%s", len(recs), logs)
	}
	r := recs[0]
	if r["level"] != "WARN" || r["auth_host"] != "api.test" || r["host"] != "other.test" || r["client"] != "billing" {
		t.Fatalf("got record %v, want a WARN naming client, auth_host and host", r)
	}

	for i := range 2 * middleware.MaxAuthWarnedHosts {
		send("h" + strconv.Itoa(i) + ".test")
	}
	if n := len(logs.Records(t, "")); n > middleware.MaxAuthWarnedHosts+1 {
		t.Fatalf("got %d WARNs for %d hosts, want at most %d", n, 2*middleware.MaxAuthWarnedHosts, middleware.MaxAuthWarnedHosts+1)
	}
	if strings.Contains(logs.String(), "tok-secret") {
		t.Fatal("a log record holds the credential")
	}
}

// TestAuthRedirectToOtherHostGetsNoCredential follows a real redirect from
// the pinned server to another one (two ports, so two hosts).
func TestAuthRedirectToOtherHostGetsNoCredential(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{}
	record := func(name string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen[name] = append(seen[name], r.Header.Get("Authorization"))
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record("other", r) }))
	t.Cleanup(other.Close)
	pinned := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("pinned", r)
		http.Redirect(w, r, other.URL+"/landing", http.StatusFound)
	}))
	t.Cleanup(pinned.Close)

	logger, logs := logcapture.New()
	pinnedHost := strings.TrimPrefix(pinned.URL, "http://")
	otherHost := strings.TrimPrefix(other.URL, "http://")
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	ev := &middleware.Events{Client: "billing", Logger: logger}
	c := &http.Client{Transport: middleware.Auth(middleware.AuthSettings{Host: pinnedHost}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok-secret"}, Events: ev})(base)}
	for range 2 {
		resp, err := c.Get(pinned.URL + "/start")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen["pinned"]; len(got) != 2 || got[0] != "Bearer tok-secret" || got[1] != "Bearer tok-secret" {
		t.Fatalf("pinned host got Authorization %q, want the token twice", got)
	}
	if got := seen["other"]; len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Fatalf("redirect target got Authorization %q, want none", got)
	}
	warns := logs.Records(t, "")
	if len(warns) != 1 || warns[0]["level"] != "WARN" || warns[0]["auth_host"] != pinnedHost || warns[0]["host"] != otherHost {
		t.Fatalf("got records %v, want one WARN naming %s and %s", warns, pinnedHost, otherHost)
	}
	if strings.Contains(logs.String(), "tok-secret") {
		t.Fatal("a log record holds the credential")
	}
}

func TestCredentialNeverPrintsItsSecrets(t *testing.T) {
	creds := []middleware.Credential{
		{Bearer: "s3cr3t-bearer"},
		{Username: "alice", Password: "s3cr3t-pass"},
	}
	for _, c := range creds {
		var outs []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v", "%10.3s"} {
			outs = append(outs, fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c))
		}
		outs = append(outs, fmt.Sprint(c), fmt.Sprintln(c), c.String(), c.GoString())
		outs = append(outs, fmt.Sprintf("%+v", struct{ Cred middleware.Credential }{c}))
		b, err := json.Marshal(struct{ Cred middleware.Credential }{c})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(b))
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "cred", c, "ptr", &c)
		slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "cred", c, slog.Any("any", c))
		outs = append(outs, buf.String())
		for _, out := range outs {
			if strings.Contains(out, "s3cr3t") || strings.Contains(out, "alice") {
				t.Errorf("output holds a secret: %s", out)
			}
		}
	}
	if got := (middleware.Credential{}).String(); got != "Credential{}" {
		t.Fatalf("zero credential: got %q", got)
	}
}

func TestAuthToOtherHostAddsNoAllocation(t *testing.T) {
	// A request to another host is passed on as is: no copy, no allocation
	// once its host has been warned about.
	auth := middleware.Auth(middleware.AuthSettings{Host: "api.test"}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "t"}})(prebuilt())
	bare := prebuilt()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://other.test/", nil)
	auth.RoundTrip(req)
	n := testing.AllocsPerRun(100, func() { auth.RoundTrip(req) })
	m := testing.AllocsPerRun(100, func() { bare.RoundTrip(req) })
	if n != m {
		t.Fatalf("other host: got %v allocs/op, want %v (the bare transport's)", n, m)
	}
}
