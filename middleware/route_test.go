package middleware_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestRoutesPrecedence(t *testing.T) {
	routes, err := middleware.NewRoutes(
		"POST /v1/charges",
		"GET /v1/reports/{id}",
		"GET /v1/reports/latest",
		"/v1/",
		"api.example.com/v1/",
		"GET /files/{rest...}",
		"DELETE /v1/items/{id}",
		"GET /{$}",
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, url string
		want        string // "" for no route
	}{
		{"POST", "http://svc.test/v1/charges", "POST /v1/charges"},
		{"GET", "http://svc.test/v1/charges", "/v1/"}, // method-less pattern
		{"GET", "http://svc.test/v1/reports/42", "GET /v1/reports/{id}"},
		{"HEAD", "http://svc.test/v1/reports/42", "GET /v1/reports/{id}"}, // GET covers HEAD
		{"GET", "http://svc.test/v1/reports/latest", "GET /v1/reports/latest"},
		{"GET", "http://svc.test/v1/reports/42/pdf", "/v1/"},
		{"GET", "http://api.example.com/v1/charges", "api.example.com/v1/"}, // host wins
		{"GET", "http://api.example.com:8443/v1/x", "api.example.com/v1/"},  // port ignored
		{"GET", "http://svc.test/files/a/b/c.txt", "GET /files/{rest...}"},
		{"PUT", "http://svc.test/files/a", ""}, // 405 for ServeMux: no route
		{"DELETE", "http://svc.test/v1/items/7", "DELETE /v1/items/{id}"},
		{"GET", "http://svc.test/", "GET /{$}"},
		{"GET", "http://svc.test", "GET /{$}"}, // empty path is "/"
		{"GET", "http://svc.test/other", ""},
		{"GET", "http://svc.test/v1", ""}, // ServeMux would redirect to /v1/
		{"GET", "http://svc.test/v1/a%2Fb", "/v1/"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "" // as clients often leave it
			got, ok := routes.Match(req)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Match: got %q, %v; want %q", got, ok, tt.want)
			}
			if req.Host != "" {
				t.Errorf("Match changed the request's Host to %q", req.Host)
			}
		})
	}
}

func TestNewRoutesRejectsBadPatterns(t *testing.T) {
	tests := []struct {
		patterns []string
		want     string
	}{
		{[]string{"GET"}, `route pattern "GET"`},
		{[]string{"GET /a/{x"}, `route pattern "GET /a/{x"`},
		{[]string{"/a/{rest...}/b"}, `route pattern "/a/{rest...}/b"`},
		{[]string{"GET /a/{x}/b", "GET /a/{y}/b"}, `route pattern "GET /a/{y}/b"`},
		{[]string{"GET /a/{x}", "GET /{y}/b"}, "conflicts"},
		{[]string{""}, "empty pattern"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.patterns, ","), func(t *testing.T) {
			_, err := middleware.NewRoutes(tt.patterns...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRouterPicksTheRoutesChain(t *testing.T) {
	routes, err := middleware.NewRoutes("POST /v1/charges")
	if err != nil {
		t.Fatal(err)
	}
	named := func(name string) http.RoundTripper {
		return middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{"X-Chain": {name}}, Body: http.NoBody}, nil
		})
	}
	rt := middleware.Router(routes, map[string]http.RoundTripper{"POST /v1/charges": named("charges")}, named("client"))
	for _, tt := range []struct{ method, want string }{{"POST", "charges"}, {"GET", "client"}} {
		req, _ := http.NewRequest(tt.method, "http://svc.test/v1/charges", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("X-Chain"); got != tt.want {
			t.Errorf("%s: got chain %q, want %q", tt.method, got, tt.want)
		}
	}
}

// Matching reads a request as net/http sends it: an empty method is GET,
// the Host field (when set) is the host, compared without case; and a
// request that matches no route allocates no 404 or 405 answer.
func TestRoutesMatchAsTheRequestIsSent(t *testing.T) {
	routes, err := middleware.NewRoutes("GET /v1/reports/{id}", "api.example.com/v2/", "POST /v1/charges")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("", "http://svc.test/v1/reports/1", nil)
	req.Method = ""
	if got, ok := routes.Match(req); !ok || got != "GET /v1/reports/{id}" {
		t.Errorf("empty method: got %q, %v; want GET /v1/reports/{id}", got, ok)
	}
	req, _ = http.NewRequest("GET", "http://10.0.0.5/v2/items", nil)
	req.Host = "API.Example.com"
	if got, ok := routes.Match(req); !ok || got != "api.example.com/v2/" {
		t.Errorf("Host override in capitals: got %q, %v; want api.example.com/v2/", got, ok)
	}
	req, _ = http.NewRequest("GET", "http://svc.test/v1/charges", nil)
	if got, ok := routes.Match(req); ok {
		t.Errorf("GET of a POST-only path: got %q, want no route", got)
	}
	allocs := testing.AllocsPerRun(100, func() { routes.Match(req) })
	if allocs > 8 { // ServeMux building its 405 answer took 17
		t.Errorf("a request that matches no route: %v allocations, want at most 8 (no 405 answer built)", allocs)
	}
}

// TestRoutePatternWithPortMatchesHostAndPort: a pattern whose host names a
// port ("POST billing.test:8443/v1/charges") matches requests to that host
// and port, written or implied by the scheme, and no other port; it is
// more specific than the same host without a port. ServeMux alone compares
// hosts without ports, so such a pattern used to load and never match.
func TestRoutePatternWithPortMatchesHostAndPort(t *testing.T) {
	routes, err := middleware.NewRoutes(
		"POST billing.test:8443/v1/charges",
		"billing.test/v1/",
		"GET billing.test:443/v1/reports/{id}",
		"[::1]:9000/v1/",
		"/v1/",
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, url, host string // host: the Host field, "" = the URL's
		want              string
	}{
		{"POST", "https://billing.test:8443/v1/charges", "", "POST billing.test:8443/v1/charges"},
		{"POST", "http://billing.test:8443/v1/charges", "", "POST billing.test:8443/v1/charges"},
		{"POST", "https://BILLING.test:8443/v1/charges", "", "POST billing.test:8443/v1/charges"},
		{"POST", "https://billing.test:9443/v1/charges", "", "billing.test/v1/"}, // another port
		{"POST", "https://billing.test/v1/charges", "", "billing.test/v1/"},      // 443 implied
		{"GET", "https://billing.test:8443/v1/charges", "", "billing.test/v1/"},  // another method
		{"GET", "https://billing.test/v1/reports/7", "", "GET billing.test:443/v1/reports/{id}"},
		{"GET", "https://billing.test:443/v1/reports/7", "", "GET billing.test:443/v1/reports/{id}"},
		{"GET", "http://billing.test/v1/reports/7", "", "billing.test/v1/"}, // 80 implied
		{"POST", "http://10.0.0.5/v1/charges", "billing.test:8443", "POST billing.test:8443/v1/charges"},
		{"GET", "http://[::1]:9000/v1/x", "", "[::1]:9000/v1/"},
		{"GET", "http://[::1]:9001/v1/x", "", "/v1/"},
		{"POST", "http://other.test:8443/v1/charges", "", "/v1/"},
		{"POST", "http://other.test:8443/v2", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url+" "+tt.host, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			got, ok := routes.Match(req)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Match: got %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
	for _, bad := range []struct{ pattern, want string }{
		{"POST billing.test:x/v1/", "port must be a number"},
		{"POST billing.test:/v1/", "port must be a number"},
		{"POST :8443/v1/", "a port needs a host name"},
	} {
		if _, err := middleware.NewRoutes(bad.pattern); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewRoutes(%q): got %v, want %q", bad.pattern, err, bad.want)
		}
	}
	_, err = middleware.NewRoutes("POST billing.test:8443/v1/{x}", "POST billing.test:8443/v1/{y}")
	if err == nil || !strings.Contains(err.Error(), "billing.test:8443") || strings.Contains(err.Error(), "billing.test@") {
		t.Errorf("a conflict between patterns with a port: got %v, want it to quote them as written", err)
	}
}

// TestRoutePatternPortOutOfRangeIsRejected: a pattern's port only had to
// be digits, so "billing.test:99999/" loaded and never matched, and
// "billing.test:08443/" never matched a request to port 8443. A port is a
// number from 1 to 65535 written without leading zeros, or the pattern is
// rejected; a request's port is compared by its value.
func TestRoutePatternPortOutOfRangeIsRejected(t *testing.T) {
	for _, bad := range []string{
		"billing.test:99999/",
		"billing.test:65536/",
		"billing.test:0/",
		"billing.test:08443/",
		"POST billing.test:18446744073709551617/v1/",
	} {
		_, err := middleware.NewRoutes(bad)
		var pe *middleware.RoutePatternError
		if !errors.As(err, &pe) || pe.Pattern != bad || !strings.Contains(pe.Reason, "port must be a number from 1 to 65535") {
			t.Errorf("NewRoutes(%q): got %v, want a *RoutePatternError for its port", bad, err)
		}
	}
	routes, err := middleware.NewRoutes("billing.test:65535/", "billing.test:1/", "billing.test:8443/")
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"http://billing.test:65535/x": "billing.test:65535/",
		"http://billing.test:1/x":     "billing.test:1/",
		"http://billing.test:08443/x": "billing.test:8443/", // the port's value
	} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if got, ok := routes.Match(req); !ok || got != want {
			t.Errorf("Match(%s): got %q, %v; want %q", url, got, ok, want)
		}
	}
}

// TestRoutePatternHostMatchesIgnoringCase: a request's host is lower-cased
// before it is matched, a pattern's host was not, so a pattern whose host
// had an upper-case letter loaded and never matched. Host names compare
// ignoring case; errors still quote a pattern as written.
func TestRoutePatternHostMatchesIgnoringCase(t *testing.T) {
	routes, err := middleware.NewRoutes("Billing.Test/v1/", "POST API.test:8443/v1/charges")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ method, url, want string }{
		{"GET", "https://billing.test/v1/x", "Billing.Test/v1/"},
		{"GET", "https://BILLING.TEST/v1/x", "Billing.Test/v1/"},
		{"POST", "https://api.test:8443/v1/charges", "POST API.test:8443/v1/charges"},
		{"POST", "https://Api.Test:8443/v1/charges", "POST API.test:8443/v1/charges"},
	} {
		req, _ := http.NewRequest(tt.method, tt.url, nil)
		if got, ok := routes.Match(req); !ok || got != tt.want {
			t.Errorf("Match(%s %s): got %q, %v; want %q", tt.method, tt.url, got, ok, tt.want)
		}
	}
	_, err = middleware.NewRoutes("GET Billing.Test:8443/v1/{x}", "GET Billing.Test:8443/v1/{y}", "Other.Test/a/{x}", "Other.Test/a/{y}")
	if err == nil || strings.Count(err.Error(), "Billing.Test:8443") < 2 || strings.Count(err.Error(), "Other.Test/a/") < 2 ||
		strings.Contains(err.Error(), "billing.test") || strings.Contains(err.Error(), "other.test") {
		t.Errorf("conflicts between patterns with upper-case hosts: got %v, want them quoted as written", err)
	}
}
