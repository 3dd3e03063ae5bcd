package middleware_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// idemSettings is fixedSettings with idempotency keys on (the default
// header and methods).
func idemSettings() middleware.RetrySettings {
	s := fixedSettings()
	s.IdempotencyKey.Enabled = true
	return s
}

// postReq is a POST with a replayable (GetBody) body.
func postReq(t *testing.T, method string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://svc.test/v1/charges", strings.NewReader(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// keysOf returns the values of header name on every request rt saw.
func keysOf(rt *fakert.Transport, name string) [][]string {
	var out [][]string
	for _, r := range rt.Requests() {
		out = append(out, r.Header.Values(name))
	}
	return out
}

// oneKey checks that every request rt saw carries exactly one value of
// header name, the same on each, and returns it.
func oneKey(t *testing.T, rt *fakert.Transport, name string) string {
	t.Helper()
	all := keysOf(rt, name)
	if len(all) == 0 {
		t.Fatal("no request reached the transport")
	}
	for i, v := range all {
		if len(v) != 1 || v[0] == "" {
			t.Fatalf("request %d: %s = %q, want one non-empty key", i+1, name, v)
		}
		if v[0] != all[0][0] {
			t.Fatalf("request %d: %s = %q, want the first request's %q: one key per logical call", i+1, name, v[0], all[0][0])
		}
	}
	return all[0][0]
}

// checkUUIDv4 fails unless key is a UUID of version 4, RFC 9562 variant.
func checkUUIDv4(t *testing.T, key string) {
	t.Helper()
	id, err := uuid.Parse(key)
	if err != nil || id.Version() != 4 || id.Variant() != uuid.RFC4122 || len(key) != 36 {
		t.Fatalf("key %q: want a UUIDv4 in its 36-character form (err %v)", key, err)
	}
}

// TestIdempotencyKeyOnePerLogicalCallAcrossRetries: a POST answered 503,
// 503, 200 is retried with idempotency keys on, and its three attempts carry
// one key, a UUIDv4; the next logical call gets a new key; the caller's
// request never gets one. Both ways of copying an attempt are covered.
func TestIdempotencyKeyOnePerLogicalCallAcrossRetries(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		name := "clone per attempt"
		if readOnly {
			name = "read-only below"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.Status(503, 503, 200, 503, 200)
				h := middleware.Retry(idemSettings(), middleware.RetryOptions{ReadOnlyBelow: readOnly})(rt)
				req := postReq(t, http.MethodPost)
				resp, err := h.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if rt.Calls() != 3 {
					t.Fatalf("attempts: got %d, want 3 (the POST is retried)", rt.Calls())
				}
				first := oneKey(t, rt, "Idempotency-Key")
				checkUUIDv4(t, first)
				for i, r := range rt.Requests() {
					if string(r.Body) != `{"amount":100}` {
						t.Errorf("attempt %d body: got %q, want the caller's", i+1, r.Body)
					}
				}
				if v, ok := req.Header["Idempotency-Key"]; ok {
					t.Errorf("caller's request changed: Idempotency-Key = %q", v)
				}

				// The next logical call: a new key, again on every attempt.
				resp, err = h.RoundTrip(postReq(t, http.MethodPost))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				keys := keysOf(rt, "Idempotency-Key")
				if len(keys) != 5 {
					t.Fatalf("attempts in all: got %d, want 5", len(keys))
				}
				second := keys[3][0]
				checkUUIDv4(t, second)
				if second == first {
					t.Errorf("second call's key %q: want a new one, not the first call's", second)
				}
				if keys[4][0] != second {
					t.Errorf("second call's retry: key %q, want %q", keys[4][0], second)
				}
			})
		})
	}
}

// TestIdempotencyKeyCallersKeyKept: a key the caller set is sent as it is
// on every attempt, never replaced and never doubled, and the POST is
// retried with it.
func TestIdempotencyKeyCallersKeyKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.Status(503, 200)
		req := postReq(t, http.MethodPost)
		req.Header.Set("Idempotency-Key", "order-42")
		resp, err := middleware.Retry(idemSettings(), middleware.RetryOptions{ReadOnlyBelow: true})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if rt.Calls() != 2 {
			t.Fatalf("attempts: got %d, want 2", rt.Calls())
		}
		if got := oneKey(t, rt, "Idempotency-Key"); got != "order-42" {
			t.Errorf("key: got %q, want the caller's order-42", got)
		}
	})
}

// TestIdempotencyKeyGatesPOSTRetries: a POST answered 503 is sent once
// with idempotency keys off (and carries no key), and retried with them on;
// a method they do not list gets no key and is not retried; an idempotent
// method listed nowhere in methods is retried as ever, without a key.
func TestIdempotencyKeyGatesPOSTRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		enabled  bool
		methods  []string
		attempts int
		keyed    bool
	}{
		{name: "off: POST sent once", method: "POST", attempts: 1},
		{name: "off: PATCH sent once", method: "PATCH", attempts: 1},
		{name: "on: POST retried", method: "POST", enabled: true, attempts: 3, keyed: true},
		{name: "on: PATCH retried", method: "PATCH", enabled: true, attempts: 3, keyed: true},
		{name: "on, methods [PATCH]: POST sent once", method: "POST", enabled: true, methods: []string{"PATCH"}, attempts: 1},
		{name: "on, methods [post] upper-cased", method: "POST", enabled: true, methods: []string{"post"}, attempts: 3, keyed: true},
		{name: "on, methods []: POST sent once", method: "POST", enabled: true, methods: []string{}, attempts: 1},
		{name: "on: PUT retried without a key", method: "PUT", enabled: true, attempts: 3},
		{name: "on: GET retried without a key", method: "GET", enabled: true, attempts: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.Status(503)
				s := fixedSettings()
				s.MaxRetries = 2
				s.IdempotencyKey.Enabled = tc.enabled
				if tc.methods != nil {
					s.IdempotencyKey.Methods = tc.methods
				}
				resp, err := middleware.Retry(s, middleware.RetryOptions{ReadOnlyBelow: true})(rt).RoundTrip(postReq(t, tc.method))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if rt.Calls() != tc.attempts {
					t.Errorf("attempts: got %d, want %d", rt.Calls(), tc.attempts)
				}
				if tc.keyed {
					oneKey(t, rt, "Idempotency-Key")
					return
				}
				for i, v := range keysOf(rt, "Idempotency-Key") {
					if len(v) != 0 {
						t.Errorf("attempt %d: Idempotency-Key = %q, want none", i+1, v)
					}
				}
			})
		})
	}
}

// TestIdempotencyKeyWithRetryOffAndCustomHeader: the key goes out with
// retries off too (the server dedupes whatever the client does), under the
// configured header name.
func TestIdempotencyKeyWithRetryOffAndCustomHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.Status(503)
		s := idemSettings()
		s.MaxRetries = 0
		s.IdempotencyKey.Header = "x-request-id"
		resp, err := middleware.Retry(s, middleware.RetryOptions{ReadOnlyBelow: true})(rt).RoundTrip(postReq(t, http.MethodPost))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		checkUUIDv4(t, oneKey(t, rt, "X-Request-Id"))
		if v := keysOf(rt, "Idempotency-Key")[0]; len(v) != 0 {
			t.Errorf("Idempotency-Key = %q, want none: the header is X-Request-Id", v)
		}
	})
}

// TestIdempotencyKeyOnePerCallAcrossHedgedCopies: a hedged POST sends
// three copies, every 100ms while none answers; all three carry the call's
// one key, the winner's included; the next call's copies share a new one.
// With keys off the POST is not hedged at all.
func TestIdempotencyKeyOnePerCallAcrossHedgedCopies(t *testing.T) {
	hedge := middleware.HedgeSettings{Enabled: true, Delay: 100 * time.Millisecond, MaxHedges: 2}
	for _, readOnly := range []bool{true, false} {
		name := "on, clone per copy"
		if readOnly {
			name = "on, read-only below"
		}
		t.Run(name, func(t *testing.T) { hedgedKeys(t, hedge, readOnly) })
	}
	t.Run("off", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := fakert.New(fakert.Step{Status: 200, Delay: time.Second})
			resp, err := middleware.Hedge(hedge, fixedSettings(), middleware.HedgeOptions{ReadOnlyBelow: true})(rt).RoundTrip(postReq(t, http.MethodPost))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if rt.Calls() != 1 {
				t.Errorf("copies: got %d, want 1 (a POST without keys is never hedged)", rt.Calls())
			}
			if v := keysOf(rt, "Idempotency-Key")[0]; len(v) != 0 {
				t.Errorf("Idempotency-Key = %q, want none", v)
			}
		})
	})
}

// hedgedKeys runs TestIdempotencyKeyOnePerCallAcrossHedgedCopies with keys
// on, each copy a clone or, with readOnly, a shallow copy.
func hedgedKeys(t *testing.T, hedge middleware.HedgeSettings, readOnly bool) {
	synctest.Test(t, func(t *testing.T) {
		slow := fakert.Step{Status: 200, Delay: time.Hour}
		rt := fakert.New(slow, slow, fakert.Step{Status: 200, Body: "third"}, slow, slow, fakert.Step{Status: 200, Body: "third"})
		h := middleware.Hedge(hedge, idemSettings(), middleware.HedgeOptions{ReadOnlyBelow: readOnly})(rt)
		resp, err := h.RoundTrip(postReq(t, http.MethodPost))
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "third" {
			t.Fatalf("winner: got %q, want the third copy", got)
		}
		synctest.Wait() // the cancelled copies return
		if rt.Calls() != 3 {
			t.Fatalf("copies: got %d, want 3", rt.Calls())
		}
		first := oneKey(t, rt, "Idempotency-Key")
		checkUUIDv4(t, first)
		for i, r := range rt.Requests() {
			if string(r.Body) != `{"amount":100}` {
				t.Errorf("copy %d body: got %q, want the caller's", i+1, r.Body)
			}
		}

		resp, err = h.RoundTrip(postReq(t, http.MethodPost))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		synctest.Wait()
		keys := keysOf(rt, "Idempotency-Key")
		if len(keys) != 6 {
			t.Fatalf("copies in all: got %d, want 6", len(keys))
		}
		for i := 3; i < 6; i++ {
			if keys[i][0] == first || keys[i][0] != keys[3][0] {
				t.Errorf("second call, copy %d: key %q, want one new key shared by its copies (first call's %q)", i-2, keys[i][0], first)
			}
		}
	})
}

// TestIdempotencyKeyConcurrentCallsGetTheirOwn: calls in flight at once on
// one layer each get their own key.
func TestIdempotencyKeyConcurrentCallsGetTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.New(fakert.Step{Status: 200, Delay: time.Second})
		h := middleware.Retry(idemSettings(), middleware.RetryOptions{ReadOnlyBelow: true})(rt)
		const calls = 8
		done := make(chan struct{})
		for range calls {
			go func() {
				defer func() { done <- struct{}{} }()
				resp, err := h.RoundTrip(postReq(t, http.MethodPost).WithContext(context.Background()))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}()
		}
		for range calls {
			<-done
		}
		seen := map[string]bool{}
		for _, v := range keysOf(rt, "Idempotency-Key") {
			if len(v) != 1 || seen[v[0]] {
				t.Fatalf("key %q: want one per call, each new", v)
			}
			seen[v[0]] = true
		}
		if len(seen) != calls {
			t.Errorf("keys: got %d, want %d", len(seen), calls)
		}
	})
}

// BenchmarkRetryIdempotencyKey is the cost of a key: a POST through Retry
// with keys off (sent as is) and on (a UUIDv4 from crypto/rand and the
// attempt's own Header).
func BenchmarkRetryIdempotencyKey(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			s := fixedSettings()
			s.IdempotencyKey.Enabled = on
			rt := middleware.Retry(s, middleware.RetryOptions{ReadOnlyBelow: true})(prebuilt())
			req, _ := http.NewRequest(http.MethodPost, "http://svc.test/v1/charges", nil)
			req.Header.Set("Content-Type", "application/json")
			serialRT(b, rt, req)
		})
	}
}

// BenchmarkPropagateDeadline is the cost of the deadline header on a
// request with a deadline.
func BenchmarkPropagateDeadline(b *testing.B) {
	for _, f := range []middleware.DeadlineFormat{middleware.DeadlineMillis, middleware.DeadlineGRPC} {
		b.Run(string(f), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			rt := middleware.PropagateDeadline(middleware.DeadlineSettings{Header: "X-Request-Timeout-Ms", Format: f})(prebuilt())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/v1/items", nil)
			serialRT(b, rt, req)
		})
	}
}

// TestIdempotencyKeyZeroSettingsInCode: settings built in code with only
// Enabled set use the default header and methods.
func TestIdempotencyKeyZeroSettingsInCode(t *testing.T) {
	for _, method := range []string{"POST", "PATCH"} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.Status(503, 200)
				s := middleware.RetrySettings{MaxRetries: 1, IdempotencyKey: middleware.IdempotencyKeySettings{Enabled: true}}
				resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(postReq(t, method))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if rt.Calls() != 2 {
					t.Fatalf("attempts: got %d, want 2", rt.Calls())
				}
				checkUUIDv4(t, oneKey(t, rt, middleware.DefaultIdempotencyKeyHeader))
			})
		})
	}
}

// hopAfter returns a redirect hop of method to url that http.Client sends
// after a response of status to prev.
func hopAfter(t *testing.T, prev *http.Request, status int, method, url string) *http.Request {
	t.Helper()
	var body *strings.Reader
	if method != http.MethodGet {
		body = strings.NewReader(`{"amount":100}`)
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequest(method, url, body)
	} else {
		req, err = http.NewRequest(method, url, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	req.Response = &http.Response{StatusCode: status, Request: prev}
	return req
}

// TestIdempotencyKeyRedirectHop: a redirect hop carries the previous hop's
// key only when it resends the same request to the same origin (307 or
// 308, same method, same scheme, host and port); a hop after a 303 (a GET
// after the POST, GET being keyed too), after a 301/302, or to another
// origin gets a new key of its own.
func TestIdempotencyKeyRedirectHop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		method string
		url    string
		reuse  bool
	}{
		{"307 same origin", http.StatusTemporaryRedirect, http.MethodPost, "http://svc.test/v2/charges", true},
		{"308 same origin, host case", http.StatusPermanentRedirect, http.MethodPost, "http://SVC.test:80/v2/charges", true},
		{"307 other host", http.StatusTemporaryRedirect, http.MethodPost, "http://other.test/v1/charges", false},
		{"307 other port", http.StatusTemporaryRedirect, http.MethodPost, "http://svc.test:8080/v1/charges", false},
		{"307 other scheme", http.StatusTemporaryRedirect, http.MethodPost, "https://svc.test/v1/charges", false},
		{"303 to GET", http.StatusSeeOther, http.MethodGet, "http://svc.test/v1/charges/1", false},
		{"302 keeping POST", http.StatusFound, http.MethodPost, "http://svc.test/v2/charges", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := idemSettings()
				s.IdempotencyKey.Methods = []string{"POST", "GET"}
				prev := postReq(t, http.MethodPost)
				prev.Header.Set("Idempotency-Key", "first-hop-key")
				rt := fakert.Status(200)
				resp, err := middleware.Retry(s, middleware.RetryOptions{ReadOnlyBelow: true})(rt).RoundTrip(hopAfter(t, prev, tc.status, tc.method, tc.url))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				got := oneKey(t, rt, "Idempotency-Key")
				if tc.reuse {
					if got != "first-hop-key" {
						t.Errorf("key: got %q, want the previous hop's", got)
					}
					return
				}
				if got == "first-hop-key" {
					t.Fatalf("key: got the previous hop's, want a new one")
				}
				checkUUIDv4(t, got)
			})
		})
	}
}

// TestIdempotencyKeyCallersHeaderPresence: a caller's header counts by its
// presence, in any case of its name and whatever its value: an empty value
// is sent as it is (no key added), and one set as h["idempotency-key"]
// is sent alone, never beside a second, generated key.
func TestIdempotencyKeyCallersHeaderPresence(t *testing.T) {
	for _, tc := range []struct {
		name, key, value string
	}{
		{"empty value", "Idempotency-Key", ""},
		{"lower-case name", "idempotency-key", "order-42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.Status(503, 200)
				req := postReq(t, http.MethodPost)
				req.Header[tc.key] = []string{tc.value}
				resp, err := middleware.Retry(idemSettings(), middleware.RetryOptions{ReadOnlyBelow: true})(rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if rt.Calls() != 2 {
					t.Fatalf("attempts: got %d, want 2", rt.Calls())
				}
				for i, r := range rt.Requests() {
					var sent []string
					for name, v := range r.Header {
						if strings.EqualFold(name, "Idempotency-Key") {
							sent = append(sent, name+"="+strings.Join(v, ","))
						}
					}
					if want := tc.key + "=" + tc.value; len(sent) != 1 || sent[0] != want {
						t.Errorf("attempt %d: sent %q, want only the caller's %q", i+1, sent, want)
					}
				}
			})
		})
	}
}

// TestIdempotencyKeyOnHedgeFallbackToOneCopy: hedging that sends no extra
// copy still keys the call: with no hedges and no retries allowed (the
// single-copy path, here by the call's Overrides), and with a body that cannot be replayed (no GetBody,
// larger than max_buffered_body), the one POST carries a UUIDv4 key.
func TestIdempotencyKeyOnHedgeFallbackToOneCopy(t *testing.T) {
	hedge := middleware.HedgeSettings{Enabled: true, Delay: 100 * time.Millisecond}
	for _, tc := range []struct {
		name  string
		setup func(s *middleware.RetrySettings, req *http.Request) *http.Request
	}{
		{"no extra copy", func(_ *middleware.RetrySettings, req *http.Request) *http.Request {
			zero := 0 // the call's own max_retries: 0 leaves no copy to hedge with
			return req.WithContext(middleware.WithOverrides(req.Context(), middleware.Overrides{MaxRetries: &zero}))
		}},
		{"body not replayable", func(s *middleware.RetrySettings, req *http.Request) *http.Request {
			s.MaxBufferedBody = 4
			req.GetBody = nil
			return req
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := idemSettings()
				req := tc.setup(&s, postReq(t, http.MethodPost))
				rt := fakert.Status(200)
				resp, err := middleware.Hedge(hedge, s, middleware.HedgeOptions{ReadOnlyBelow: true})(rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if rt.Calls() != 1 {
					t.Fatalf("copies: got %d, want 1", rt.Calls())
				}
				checkUUIDv4(t, oneKey(t, rt, "Idempotency-Key"))
			})
		})
	}
}
