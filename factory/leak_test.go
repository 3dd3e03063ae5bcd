package factory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	nhttptrace "net/http/httptrace"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// hexDigest matches the SHA-256 digests status shows (config_hash): hex
// that may hold "abc" by chance.
var hexDigest = regexp.MustCompile(`[0-9a-f]{64}`)

// TestSecretsNeverLeakThroughAnyOutput sends requests whose URL holds
// user:pass@ and ?access_token=abc through every path that reports on them
// — retry events, breaker open and reject, bulkhead reject, timeout, the
// per-attempt log, a transport error — and checks that no log record, event,
// error (errors.Unwrap of the *url.Error) or status output holds abc or
// pass, nor the configured bearer token.
func TestSecretsNeverLeakThroughAnyOutput(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/block":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	t.Cleanup(func() { closeOnce(release) })
	secretURL := func(base, path string) string {
		u, _ := url.Parse(base + path + "?access_token=abc&page=2")
		u.User = url.UserPassword("user", "pass")
		return u.String()
	}
	// A port nothing listens on, for a transport error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := "http://" + ln.Addr().String()
	ln.Close()

	d := config.Default()
	d.Retry.MaxRetries = 0
	d.Retry.InitialBackoff, d.Retry.MaxBackoff = time.Millisecond, time.Millisecond
	d.Logging.Level = middleware.LogDebug
	with := func(f func(c *config.ClientConfig)) config.ClientConfig {
		c := d
		c.Headers = map[string]string{"X-Api-Key": "hdr-zzz", "User-Agent": "leak-test"}
		f(&c)
		return c
	}
	cfg := config.Config{Defaults: d, Clients: map[string]config.ClientConfig{
		"retry": with(func(c *config.ClientConfig) {
			c.Retry.MaxRetries = 1
			c.Auth = middleware.AuthSettings{Host: hostOf(srv.Server), BearerToken: "tok-zzz"}
		}),
		"breaker": with(func(c *config.ClientConfig) {
			c.CircuitBreaker.Enabled = true
			c.CircuitBreaker.FailureThreshold = 1
			c.CircuitBreaker.Cooldown = time.Hour
		}),
		"bulkhead": with(func(c *config.ClientConfig) { c.Bulkhead = middleware.BulkheadSettings{MaxConcurrent: 1} }),
		"slow":     with(func(c *config.ClientConfig) { c.Timeout = 50 * time.Millisecond }),
		"dead":     with(func(c *config.ClientConfig) { c.Retry.MaxRetries = 1 }),
		"hooked":   with(func(c *config.ClientConfig) {}),
	}}
	// Code's own layer that puts the URL, as written, in its error.
	hooks := map[string]factory.Hooks{"hooked": {Attempt: []middleware.Middleware{func(http.RoundTripper) http.RoundTripper {
		return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return nil, fmt.Errorf("hook refused %s (user %s): %w", req.URL, req.URL.User, context.Canceled)
		})
	}}}}
	events := &eventLog{}
	logger, logs := logcapture.New()
	r, err := factory.New(cfg, factory.Options{Observer: events, Logger: logger, ClientHooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })

	var errs []error
	call := func(client, u string) {
		t.Helper()
		resp, err := r.Get(client).Get(u)
		if err != nil {
			errs = append(errs, err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	call("retry", secretURL(srv.URL, "/down"))   // retry.attempt, retry.exhausted, 2 log records
	call("breaker", secretURL(srv.URL, "/down")) // circuit.opened
	call("breaker", secretURL(srv.URL, "/down")) // circuit.rejected
	call("dead", secretURL(deadAddr, "/"))       // transport error, retried
	call("slow", secretURL(srv.URL, "/block"))   // timeout.exceeded
	call("hooked", secretURL(srv.URL, "/"))      // an error of code's own layer, naming the URL
	entered := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		// Holds the bulkhead's slot until release.
		req, _ := http.NewRequest(http.MethodGet, secretURL(srv.URL, "/block"), nil)
		req = req.WithContext(httptrace(req, entered))
		resp, err := r.Get("bulkhead").Do(req)
		if err == nil {
			resp.Body.Close()
		}
	})
	<-entered
	call("bulkhead", secretURL(srv.URL, "/down")) // bulkhead.rejected
	closeOnce(release)
	wg.Wait()
	bad := cfg
	bad.Clients = map[string]config.ClientConfig{"retry": with(func(c *config.ClientConfig) { c.Retry.MaxRetries = -1 })}
	if err := r.Apply(bad); err == nil {
		t.Fatal("Apply of an invalid config succeeded")
	}

	if len(errs) != 5 {
		t.Fatalf("got %d errors, want 5 (circuit open, transport, timeout, hook, bulkhead): %v", len(errs), errs)
	}
	wantIs := []error{middleware.ErrCircuitOpen, nil, context.DeadlineExceeded, context.Canceled, middleware.ErrBulkheadFull}
	outputs := map[string]string{"log": logs.String(), "events": events.String()}
	for i, err := range errs {
		var ue *url.Error
		if !errors.As(err, &ue) {
			t.Fatalf("error %d: got %T, want *url.Error from http.Client", i, err)
		}
		if strings.Contains(err.Error(), "pass") {
			t.Errorf("error %d: the *url.Error shows the password: %v", i, err)
		}
		if wantIs[i] != nil && !errors.Is(err, wantIs[i]) {
			t.Errorf("error %d: errors.Is(%v, %v) = false", i, err, wantIs[i])
		}
		outputs["error "+err.Error()] = errors.Unwrap(err).Error()
	}
	st := r.Status()
	stJSON, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	outputs["status"] = string(stJSON) + " " + st.LastError.Error()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	outputs["handler"] = rec.Body.String()

	for _, name := range []string{middleware.EventRetryAttempt, middleware.EventRetryExhausted, middleware.EventCircuitOpened,
		middleware.EventCircuitRejected, middleware.EventBulkheadRejected, middleware.EventTimeoutExceeded, middleware.EventConfigRejected} {
		if events.names()[name] == 0 {
			t.Errorf("no %s event: the test did not drive that path", name)
		}
	}
	if n := len(logs.Records(t, "http attempt")); n < 5 {
		t.Errorf("got %d per-attempt log records, want at least 5", n)
	}
	for name, out := range outputs {
		clean := hexDigest.ReplaceAllString(out, "")
		clean = strings.ReplaceAll(clean, "password", "") // the key names basic.password(_file)
		for _, secret := range []string{"abc", "pass", "tok-zzz", "hdr-zzz"} {
			if strings.Contains(clean, secret) {
				t.Errorf("%s holds %q:\n%s", name, secret, out)
			}
		}
	}
}

// httptrace returns req's context, closing entered once the server has the
// request (its response headers are not yet written when the handler
// blocks, so "got the connection and wrote the request" is the signal).
func httptrace(req *http.Request, entered chan struct{}) context.Context {
	var once sync.Once
	return nhttptrace.WithClientTrace(req.Context(), &nhttptrace.ClientTrace{
		WroteRequest: func(nhttptrace.WroteRequestInfo) { once.Do(func() { close(entered) }) },
	})
}

var closeMu sync.Mutex

// closeOnce closes ch unless it is closed already.
func closeOnce(ch chan struct{}) {
	closeMu.Lock()
	defer closeMu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}
