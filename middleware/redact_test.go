package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://svc.test/a?page=2", "https://svc.test/a?page=2"},
		{"https://user:pw@svc.test/a", "https://svc.test/a"},
		{"https://svc.test/a?token=abc&page=2", "https://svc.test/a?token=REDACTED&page=2"},
		{"https://svc.test/a?API_KEY=abc&Sig=x&X-Amz-Signature=y", "https://svc.test/a?API_KEY=REDACTED&Sig=REDACTED&X-Amz-Signature=REDACTED"},
		{"https://svc.test/a?access%5Ftoken=abc", "https://svc.test/a?access%5Ftoken=REDACTED"},
		{"https://svc.test/a?password", "https://svc.test/a?password"},
		{"https://svc.test/a?key=1&key=2&monkey=3", "https://svc.test/a?key=REDACTED&key=REDACTED&monkey=3"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := url.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := middleware.RedactURL(u); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := middleware.RedactURL(nil); got != "" {
		t.Fatalf("got %q for nil, want empty", got)
	}
}

func TestRedactURLMore(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://svc.test/a?page=2;token=abc", "https://svc.test/a?page=2;token=REDACTED"},
		{"https://svc.test/cb#access_token=abc&state=x", "https://svc.test/cb#access_token=REDACTED&state=x"},
		{"https://svc.test/cb#section-2", "https://svc.test/cb#section-2"},
		{"https://svc.test/a?Access+Token=x&%20token=y", "https://svc.test/a?Access+Token=x&%20token=REDACTED"},
		{"https://tok@svc.test/a", "https://svc.test/a"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := url.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := middleware.RedactURL(u); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRedactURLString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://u:p@svc.test/a?token=abc", "https://svc.test/a?token=REDACTED"},
		{"https://u:p@svc.test/%zz?token=abc", "https://svc.test/%zz?REDACTED"}, // does not parse
		{"svc.test/%zz?token=abc", "svc.test/%zz?REDACTED"},
	}
	for _, tt := range tests {
		if got := middleware.RedactURLString(tt.in); got != tt.want {
			t.Errorf("RedactURLString(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	in := `proxy "http://u:pass@proxy.test:3128/?sig=abc" refused; see https://docs.test/x?page=1 (no ://)`
	want := `proxy "http://proxy.test:3128/?sig=REDACTED" refused; see https://docs.test/x?page=1 (no ://)`
	if got := middleware.RedactText(in); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := middleware.RedactText("no urls"); got != "no urls" {
		t.Fatalf("got %q", got)
	}
}

func TestIsSensitiveHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "Cookie": true, "X-Api-Key": true,
		"X-Auth-Token": true, "User-Agent": false, "Accept": false, "X-Request-Id": false,
	} {
		if got := middleware.IsSensitiveHeader(name); got != want {
			t.Errorf("IsSensitiveHeader(%q): got %v, want %v", name, got, want)
		}
	}
}

// timeoutErr is a net.Error-like timeout that names the URL.
type timeoutErr struct{ msg string }

func (e timeoutErr) Error() string { return e.msg }
func (e timeoutErr) Timeout() bool { return true }

func TestRedactErrorKeepsChainAndHidesSecrets(t *testing.T) {
	raw := "https://user:pass@svc.test/v1?access_token=abc123&page=2"
	u, _ := url.Parse(raw)
	open := &middleware.CircuitOpenError{}
	tests := []struct {
		name   string
		err    error
		target error
	}{
		{"wrapped sentinel", fmt.Errorf("calling %s: %w", raw, open), middleware.ErrCircuitOpen},
		{"context error", fmt.Errorf("GET %s: %w", u.Redacted(), context.DeadlineExceeded), context.DeadlineExceeded},
		{"only the value", fmt.Errorf("bad token abc123: %w", context.Canceled), context.Canceled},
		{"only the password", fmt.Errorf("auth pass rejected: %w", io.EOF), io.EOF},
		{"escaped query", fmt.Errorf("query %s: %w", u.RawQuery, io.EOF), io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := middleware.RedactError(tt.err, u)
			msg := got.Error()
			if strings.Contains(msg, "abc123") || strings.Contains(msg, "pass") {
				t.Fatalf("got %q, want no secret", msg)
			}
			if !errors.Is(got, tt.target) {
				t.Fatalf("errors.Is(%v, %v) = false through the redaction", got, tt.target)
			}
		})
	}

	ue := &url.Error{Op: "Get", URL: raw, Err: timeoutErr{"read " + raw + ": timeout"}}
	got := middleware.RedactError(ue, u)
	var gotUE *url.Error
	if !errors.As(got, &gotUE) || gotUE == ue {
		t.Fatalf("got %T, want a redacted copy of the *url.Error", got)
	}
	if msg := got.Error(); strings.Contains(msg, "abc123") || strings.Contains(msg, "pass") {
		t.Fatalf("got %q, want no secret", msg)
	}
	if !gotUE.Timeout() {
		t.Fatal("Timeout() lost through the redaction")
	}

	clean := errors.New("connection refused")
	if got := middleware.RedactError(clean, u); got != clean {
		t.Fatalf("an error without secrets: got %v, want it as is", got)
	}
	plain, _ := url.Parse("https://svc.test/v1?page=2")
	withURL := fmt.Errorf("GET %s: %w", plain, io.EOF)
	if got := middleware.RedactError(withURL, plain); got != withURL {
		t.Fatal("a URL without secrets: the error was wrapped, want it as is")
	}
	if middleware.RedactError(nil, u) != nil {
		t.Fatal("nil error: got non-nil")
	}
}

func TestRedactErrorsMiddleware(t *testing.T) {
	raw := "https://svc.test/v1?token=abc123"
	inner := fmt.Errorf("dial %s: %w", raw, context.DeadlineExceeded)
	rt := middleware.RedactErrors()(middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		return nil, inner
	}))
	c := &http.Client{Transport: rt}
	_, err := c.Get(raw)
	if err == nil {
		t.Fatal("want an error")
	}
	// The stdlib's *url.Error holds the URL as written: docs/security.md says to
	// log errors.Unwrap(err), which is ours and redacted.
	if msg := errors.Unwrap(err).Error(); strings.Contains(msg, "abc123") {
		t.Fatalf("errors.Unwrap(err): got %q, want no secret", msg)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, inner) {
		t.Fatal("errors.Is lost through the redaction")
	}
}
