package otelswitchboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// other stands for a value beyond the bounded set (a method not in RFC
// 9110, a host beyond MaxHosts), as the semantic conventions spell it.
const other = "_OTHER"

// method returns m as http.request.method reports it: a known method as
// is ("" is GET, as net/http reads it), any other as "_OTHER".
func method(m string) string {
	switch m {
	case "":
		return "GET"
	case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY":
		return m
	}
	return other
}

// server returns server.address and server.port of u: the host name,
// lower-cased and admitted by hosts, and the port written or implied by
// the scheme (0 when neither tells).
func (t *Telemetry) server(u *url.URL) (string, int) {
	if u == nil {
		return "", 0
	}
	host := strings.ToLower(u.Hostname())
	port := 0
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	} else {
		switch u.Scheme {
		case "http":
			port = 80
		case "https":
			port = 443
		}
	}
	return t.hosts.admit(host), port
}

// hostSet is the bounded set of hosts a Telemetry reports: the first max
// distinct ones seen, in order of arrival; every later one is "_OTHER".
// It is safe for concurrent use; a known host costs one sync.Map load.
type hostSet struct {
	max  int
	seen sync.Map // host → struct{}
	mu   sync.Mutex
	n    atomic.Int64 // entries in seen; written under mu
}

func (s *hostSet) admit(host string) string {
	if host == "" {
		return ""
	}
	if _, ok := s.seen.Load(host); ok {
		return host
	}
	if s.n.Load() >= int64(s.max) {
		return other
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen.Load(host); ok {
		return host
	}
	if s.n.Load() >= int64(s.max) {
		return other
	}
	s.seen.Store(host, struct{}{})
	s.n.Add(1)
	return host
}

// errorType is error.type for err, the error of a RoundTrip of req: a
// short name for switchboard's own outcomes, "timeout" and "canceled" for
// contexts, else the Go type, as semconv.ErrorType derives it. A local
// rejection is the one middleware.Classify decides, named after the
// sentinel middleware.Rejection finds. The set is bounded by the code,
// never by data.
func errorType(req *http.Request, err error) string {
	if middleware.Classify(req, nil, err) == middleware.OutcomeRejected {
		switch middleware.Rejection(err) {
		case middleware.ErrCircuitOpen:
			return "circuit_open"
		case middleware.ErrBulkheadFull:
			return "bulkhead_full"
		case middleware.ErrRateLimited:
			return "rate_limited"
		}
	}
	var te *middleware.TimeoutError
	switch {
	case errors.Is(err, factory.ErrClosed):
		return "registry_closed"
	case errors.As(err, &te):
		if te.PerAttempt {
			return "attempt_timeout"
		}
		return "timeout"
	case req != nil && middleware.AttemptTimeoutFired(req.Context()):
		return "attempt_timeout" // an attempt span's error, before the layer above wraps it
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return semconv.ErrorType(err).Value.AsString()
}
