package middleware_test

import (
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestRedactProxyURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://proxy:3128", "http://proxy:3128"},
		{"http://user:pw@proxy:3128", "http://REDACTED@proxy:3128"},
		{"socks5://token@proxy:1080", "socks5://REDACTED@proxy:1080"},
		{"http://u:p@proxy:3128/?token=abc", "http://REDACTED@proxy:3128/?token=REDACTED"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := middleware.RedactProxyURL(tt.in); got != tt.want {
			t.Errorf("RedactProxyURL(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}
