package middleware_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestBaseURLResolves(t *testing.T) {
	base, _ := url.Parse("https://billing.internal/api/")
	tests := []struct{ in, want string }{
		{"v1/invoices", "https://billing.internal/api/v1/invoices"},
		{"/v1/invoices", "https://billing.internal/v1/invoices"},
		{"v1/invoices?page=2", "https://billing.internal/api/v1/invoices?page=2"},
		{"../v1", "https://billing.internal/v1"},
		{"", "https://billing.internal/api/"},
		{"http://other.internal/x", "http://other.internal/x"}, // has a host: untouched
		{"//other.internal/x", "//other.internal/x"},           // has a host: untouched
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ft := fakert.Status(200)
			req, err := http.NewRequest(http.MethodGet, tt.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := middleware.BaseURL(base)(ft).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := ft.Requests()[0].URL; got != tt.want {
				t.Errorf("URL sent: got %q, want %q", got, tt.want)
			}
			if req.URL.String() != tt.in {
				t.Errorf("caller's URL: got %q, want %q unchanged", req.URL, tt.in)
			}
		})
	}
}

func TestBaseURLRelativeRedirect(t *testing.T) {
	base, _ := url.Parse("https://billing.internal/api/")
	tests := []struct{ location, want string }{
		{"next", "https://billing.internal/api/v1/next"},
		{"/login", "/login"}, // from the root: http.Client resolves it alike, keeping credentials
		{"//other.internal/x", "https://other.internal/x"},
		{"https://elsewhere.internal/x", "https://elsewhere.internal/x"},
	}
	for _, tt := range tests {
		t.Run(tt.location, func(t *testing.T) {
			ft := fakert.New(fakert.Step{Status: http.StatusFound, Header: http.Header{"Location": {tt.location}}})
			req, _ := http.NewRequest(http.MethodGet, "v1/invoices", nil)
			resp, err := middleware.BaseURL(base)(ft).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Location"); got != tt.want {
				t.Errorf("Location: got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBaseURLRedirectKeepsCredentials runs a call redirected to a path
// from the root through http.Client: the hop reaches base's host, with the
// caller's Authorization and Cookie, as a same-host redirect of a request
// with a host would.
func TestBaseURLRedirectKeepsCredentials(t *testing.T) {
	base, _ := url.Parse("https://billing.internal/api/")
	ft := fakert.New(
		fakert.Step{Status: http.StatusFound, Header: http.Header{"Location": {"/b"}}},
		fakert.Step{Status: http.StatusOK},
	)
	c := &http.Client{Transport: middleware.BaseURL(base)(ft)}
	req, _ := http.NewRequest(http.MethodGet, "/a", nil)
	req.Header.Set("Authorization", "Bearer x")
	req.Header.Set("Cookie", "s=1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := ft.Requests()
	if len(got) != 2 {
		t.Fatalf("requests: got %d, want 2", len(got))
	}
	if got[1].URL != "https://billing.internal/b" {
		t.Errorf("hop URL: got %q, want https://billing.internal/b", got[1].URL)
	}
	if a, ck := got[1].Header.Get("Authorization"), got[1].Header.Get("Cookie"); a != "Bearer x" || ck != "s=1" {
		t.Errorf("hop credentials: Authorization %q, Cookie %q; want both kept", a, ck)
	}
}

func TestBaseURLNilIsNoLayer(t *testing.T) {
	ft := fakert.Status(200)
	if rt := middleware.BaseURL(nil)(ft); rt != http.RoundTripper(ft) {
		t.Errorf("BaseURL(nil): got a layer %T, want next itself", rt)
	}
}

// BenchmarkBaseURL measures the resolution's cost per request: a
// host-less URL (resolved, one request copy) and a full one (passed on).
func BenchmarkBaseURL(b *testing.B) {
	base, _ := url.Parse("https://billing.internal/api/")
	next := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}, nil
	})
	rt := middleware.BaseURL(base)(next)
	for _, u := range []string{"v1/invoices", "https://billing.internal/api/v1/invoices"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		b.Run(u, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := rt.RoundTrip(req); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
