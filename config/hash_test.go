package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestClientConfigHash(t *testing.T) {
	base := config.Default().Hash()
	if got := config.Default().Hash(); got != base {
		t.Fatalf("Hash of equal configs: got %s and %s, want equal", got, base)
	}
	if len(base) != 64 {
		t.Errorf("Hash length: got %d, want 64", len(base))
	}

	same := config.Default()
	same.Headers = nil
	same.Retry.RetryableMethods, same.Retry.RetryableStatus = nil, nil
	if got := same.Hash(); got != base {
		t.Errorf("Hash with nil instead of an empty map and the default lists: got %s, want %s", got, base)
	}

	tests := []struct {
		name   string
		mutate func(c *config.ClientConfig)
	}{
		{"timeout", func(c *config.ClientConfig) { c.Timeout++ }},
		{"header added", func(c *config.ClientConfig) { c.Headers = map[string]string{"X-A": "1"} }},
		{"header name vs value", func(c *config.ClientConfig) { c.Headers = map[string]string{"X-A1": ""} }},
		{"transport", func(c *config.ClientConfig) { c.Transport.ForceHTTP2 = false }},
		{"proxy", func(c *config.ClientConfig) { c.Transport.ProxyURL = "http://p:1" }},
		{"tls", func(c *config.ClientConfig) { c.TLS.ServerName = "x" }},
		{"retry list item", func(c *config.ClientConfig) { c.Retry.RetryableStatus[0] = 500 }},
		{"retry list order", func(c *config.ClientConfig) {
			s := c.Retry.RetryableStatus
			s[0], s[1] = s[1], s[0]
		}},
		{"methods", func(c *config.ClientConfig) { c.Retry.RetryableMethods = []string{"GET"} }},
		{"methods split differently", func(c *config.ClientConfig) { c.Retry.RetryableMethods = []string{"GE", "T"} }},
		{"budget", func(c *config.ClientConfig) { c.Retry.Budget.Ratio = 0.25 }},
		{"breaker", func(c *config.ClientConfig) { c.CircuitBreaker.Enabled = true }},
		{"bulkhead", func(c *config.ClientConfig) { c.Bulkhead.MaxWait = time.Nanosecond }},
		{"rate limit", func(c *config.ClientConfig) { c.RateLimit.RequestsPerSecond = 0.5 }},
		{"auth secret", func(c *config.ClientConfig) { c.Auth.BearerToken = "t" }},
		{"basic password", func(c *config.ClientConfig) { c.Auth.Basic.Password = "p" }},
		{"logging", func(c *config.ClientConfig) { c.Logging.Level = "off" }},
	}
	seen := map[string]string{base: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.mutate(&c)
			got := c.Hash()
			if prev, dup := seen[got]; dup {
				t.Errorf("Hash after %s: got the same hash as %s, want a different one", tt.name, prev)
			}
			seen[got] = tt.name
			if again := c.Hash(); again != got {
				t.Errorf("Hash twice: got %s then %s, want equal", got, again)
			}
		})
	}
}

func TestLoadedHashStable(t *testing.T) {
	file := "defaults:\n  headers: {A: '1', B: '2', C: '3'}\nclients:\n  billing: {timeout: 3s}\n"
	h1 := client(t, mustLoad(t, config.Loader{File: writeConfig(t, file)}), "billing").Hash()
	h2 := client(t, mustLoad(t, config.Loader{File: writeConfig(t, file)}), "billing").Hash()
	if h1 != h2 {
		t.Errorf("Hash across loads: got %s and %s, want equal", h1, h2)
	}
}

// A rotated token file must change the input hash, or a reload it triggers
// would be skipped as unchanged and the old token kept.
func TestInputHashCoversReferencedFiles(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	file := filepath.Join(dir, "clients.yaml")
	mustWrite(t, token, "first")
	mustWrite(t, file, "clients:\n  billing:\n    auth: {host: billing.internal, bearer_token_file: "+token+"}\n")
	l := config.Loader{File: file}
	a, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.Files, token) {
		t.Fatalf("Files: got %v, want the token file in it", a.Files)
	}
	mustWrite(t, token, "second")
	b, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if a.InputHash == b.InputHash {
		t.Fatal("InputHash did not change when the token file did")
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestNilAndEmptyRetryListsDiffer guards the nil-versus-[] trap: for the
// retry layer a nil retryable_status or retryable_methods means the
// default list and an empty one means none, so Equal and Hash must see a
// code-built change from nil to an empty list (or a reload would skip it
// and keep retrying), and must not see one from nil to the default list.
func TestNilAndEmptyRetryListsDiffer(t *testing.T) {
	tests := []struct {
		name          string
		setNil, empty func(c *config.ClientConfig)
		defaultList   func(c *config.ClientConfig)
	}{
		{
			name:        "retryable_status",
			setNil:      func(c *config.ClientConfig) { c.Retry.RetryableStatus = nil },
			empty:       func(c *config.ClientConfig) { c.Retry.RetryableStatus = []int{} },
			defaultList: func(c *config.ClientConfig) { c.Retry.RetryableStatus = middleware.DefaultRetryableStatus() },
		},
		{
			name:        "retryable_methods",
			setNil:      func(c *config.ClientConfig) { c.Retry.RetryableMethods = nil },
			empty:       func(c *config.ClientConfig) { c.Retry.RetryableMethods = []string{} },
			defaultList: func(c *config.ClientConfig) { c.Retry.RetryableMethods = middleware.IdempotentMethods() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withNil, withEmpty, withDefault := config.Default(), config.Default(), config.Default()
			tt.setNil(&withNil)
			tt.empty(&withEmpty)
			tt.defaultList(&withDefault)
			if withNil.Equal(withEmpty) || withEmpty.Equal(withNil) {
				t.Error("Equal(nil list, empty list): got true, want false")
			}
			if withNil.Hash() == withEmpty.Hash() {
				t.Error("Hash: nil and empty list alike, want different")
			}
			if !withNil.Equal(withDefault) || withNil.Hash() != withDefault.Hash() {
				t.Error("nil and the default list: want Equal and the same Hash (the same behaviour)")
			}
		})
	}
}

// TestChangedKeysSeesAListItemSplitDifferently: ChangedKeys compares the
// canonical encoding Equal and Hash judge by, not the rendered text, so
// [GET, POST] and ["GET, POST"], which render alike, are a change.
func TestChangedKeysSeesAListItemSplitDifferently(t *testing.T) {
	a, b := config.Default(), config.Default()
	a.Retry.RetryableMethods = []string{"GET", "POST"}
	b.Retry.RetryableMethods = []string{"GET, POST"}
	if a.Equal(b) {
		t.Fatal("Equal: got true, want false")
	}
	got := config.ChangedKeys(a, b)
	if len(got) != 1 || got[0].Key != "retry.retryable_methods" {
		t.Fatalf("ChangedKeys: got %+v, want retry.retryable_methods changed", got)
	}
}

// TestZeroIdempotencyAndDeadlineFieldsMeanTheirDefaults: a config built in
// code with retry.idempotency_key.methods nil, its header "" and
// deadline.format "" behaves as the defaults those zero values mean, so
// Equal, Hash and ChangedKeys see no change against the explicit defaults
// (a reload would otherwise rebuild the client for nothing), on the client
// and on a route; an empty methods list (no method keyed) is a change.
func TestZeroIdempotencyAndDeadlineFieldsMeanTheirDefaults(t *testing.T) {
	explicit, zero := config.Default(), config.Default()
	explicit.Retry.IdempotencyKey.Enabled, zero.Retry.IdempotencyKey.Enabled = true, true
	zero.Retry.IdempotencyKey.Methods, zero.Retry.IdempotencyKey.Header = nil, ""
	zero.Deadline.Format = ""
	explicit.Routes = map[string]config.RouteConfig{"/v1/": {Retry: explicit.Retry}}
	zero.Routes = map[string]config.RouteConfig{"/v1/": {Retry: zero.Retry}}
	if !zero.Equal(explicit) || !explicit.Equal(zero) {
		t.Error("Equal(zero fields, explicit defaults): got false, want true")
	}
	if zero.Hash() != explicit.Hash() {
		t.Error("Hash: zero fields and explicit defaults differ, want alike")
	}
	if keys := config.ChangedKeys(zero, explicit); len(keys) != 0 {
		t.Errorf("ChangedKeys: got %v, want none", keys)
	}
	none := explicit
	none.Retry.IdempotencyKey.Methods = []string{}
	if none.Equal(zero) || none.Hash() == zero.Hash() {
		t.Error("methods: [] (none) against nil (the default): want a change")
	}
}
