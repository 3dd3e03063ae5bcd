package middleware_test

import (
	"net/url"
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
