package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultFaultAbortStatus is the status of an injected abort when
// fault.abort.status is not set.
const DefaultFaultAbortStatus = http.StatusServiceUnavailable

// FaultSettings is the `fault` block: faults injected into a client's
// attempts for a game day or a staging test, as Envoy's fault filter does.
// The zero value injects nothing; DefaultFaultSettings returns the built-in
// values (off, aborts answer 503).
type FaultSettings struct {
	// Enabled switches fault injection on. Off, the layer is not in the
	// pipeline at all.
	Enabled bool `koanf:"enabled" json:"enabled"`
	// Abort answers a share of the attempts without sending them.
	Abort FaultAbort `koanf:"abort" json:"abort"`
	// Delay holds a share of the attempts back before sending them.
	Delay FaultDelay `koanf:"delay" json:"delay"`
	// Header, when not "", limits faults to requests that carry this
	// header (any value), so that one test client can be faulted while the
	// rest of the traffic is not. "" faults every request.
	Header string `koanf:"header" json:"header"`
}

// FaultAbort is the `fault.abort` block. The zero value aborts nothing.
type FaultAbort struct {
	// Percent is the share of attempts aborted, in [0, 100].
	Percent float64 `koanf:"percent" json:"percent" minimum:"0" maximum:"100"`
	// Status is the status of the response an aborted attempt gets; 0
	// means DefaultFaultAbortStatus (503).
	Status int `koanf:"status" json:"status" minimum:"200" maximum:"599"`
	// Error makes an aborted attempt fail with a transport error
	// (ErrFaultInjected) instead of a response.
	Error bool `koanf:"error" json:"error"`
}

// FaultDelay is the `fault.delay` block. The zero value delays nothing.
type FaultDelay struct {
	// Percent is the share of attempts delayed, in [0, 100].
	Percent float64 `koanf:"percent" json:"percent" minimum:"0" maximum:"100"`
	// Duration is how long a delayed attempt waits before it is sent (or
	// aborted).
	Duration time.Duration `koanf:"duration" json:"duration" minimum:"0"`
}

// DefaultFaultSettings returns the built-in fault settings: off, and an
// abort, once switched on, answers DefaultFaultAbortStatus.
func DefaultFaultSettings() FaultSettings {
	return FaultSettings{Abort: FaultAbort{Status: DefaultFaultAbortStatus}}
}

// ErrFaultInjected is matched (errors.Is, also through the *url.Error of
// http.Client) by the transport error of an attempt that fault.abort.error
// failed. Retry treats it as any transient transport error, and the
// breaker as a backend failure: that is the point of injecting it.
var ErrFaultInjected = errors.New("switchboard: fault injected")

// FaultOptions are the code-only parts of the fault layer. The zero value
// emits no events and draws from a source of the layer's own, seeded at
// random.
type FaultOptions struct {
	// Events receives EventFaultInjected at slog.LevelInfo for every
	// injected fault, with Reason "abort", "error" or "delay" and, for a
	// delay, Delay. Nil means no events.
	Events *Events
	// Seed, when not 0, seeds the layer's random source (a PCG), so that a
	// test sees the same faults on every run. 0 seeds it at random.
	Seed uint64
}

// Fault returns the fault injection layer: for each attempt that s selects
// (s.Header present, when set), it draws whether to delay it (Delay.Percent
// of attempts wait Delay.Duration) and then whether to abort it
// (Abort.Percent of attempts get a response of Abort.Status, or with
// Abort.Error the transport error ErrFaultInjected), never sending an
// aborted attempt. It sits just above the base transport, so that retry,
// hedging, the breaker and the budget see an injected fault as they would
// a real one. With s.Enabled false it returns the identity.
//
// Each layer draws from one random source (see FaultOptions.Seed) under a
// mutex, so the faults of a client over many attempts follow the percents.
// A delay ends early when the request's context ends, with the context's
// error. An aborted response carries the header X-Switchboard-Fault: abort
// and an empty body; the request body is closed, as a RoundTripper must.
// It keeps the RoundTripper contract and is safe for concurrent use.
func Fault(s FaultSettings, o FaultOptions) Middleware {
	if !s.Enabled || (s.Abort.Percent <= 0 && (s.Delay.Percent <= 0 || s.Delay.Duration <= 0)) {
		return identity
	}
	if s.Abort.Status == 0 {
		s.Abort.Status = DefaultFaultAbortStatus
	}
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	f := &fault{s: s, ev: o.Events, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	return func(next http.RoundTripper) http.RoundTripper {
		return &faultRT{f: f, next: next}
	}
}

// fault is the state one Fault layer shares among its RoundTrippers.
type fault struct {
	s  FaultSettings
	ev *Events

	mu  sync.Mutex // guards rng, which is not safe for concurrent use
	rng *rand.Rand
}

// draw reports whether an event of the given percent happens, taking one
// value from the source only when the outcome is not certain.
func (f *fault) draw(percent float64) bool {
	switch {
	case percent <= 0:
		return false
	case percent >= 100:
		return true
	}
	f.mu.Lock()
	x := f.rng.Float64()
	f.mu.Unlock()
	return x*100 < percent
}

// faultRT is the RoundTripper of Fault.
type faultRT struct {
	f    *fault
	next http.RoundTripper
}

func (t *faultRT) RoundTrip(req *http.Request) (*http.Response, error) {
	f := t.f
	if f.s.Header != "" && len(req.Header.Values(f.s.Header)) == 0 {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	if f.s.Delay.Duration > 0 && f.draw(f.s.Delay.Percent) {
		f.emit(ctx, req, "delay", f.s.Delay.Duration)
		timer := time.NewTimer(f.s.Delay.Duration)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			closeBody(req)
			return nil, fmt.Errorf("switchboard: injected fault delay interrupted: %w", context.Cause(ctx))
		}
	}
	if !f.draw(f.s.Abort.Percent) {
		return t.next.RoundTrip(req)
	}
	closeBody(req)
	if f.s.Abort.Error {
		f.emit(ctx, req, "error", 0)
		return nil, fmt.Errorf("%w (fault.abort.error)", ErrFaultInjected)
	}
	f.emit(ctx, req, "abort", 0)
	code := f.s.Abort.Status
	return &http.Response{
		Status:     strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode: code,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{"X-Switchboard-Fault": {"abort"}},
		Body:       http.NoBody,
		Request:    req,
	}, nil
}

// emit sends EventFaultInjected of the given kind.
func (f *fault) emit(ctx context.Context, req *http.Request, kind string, delay time.Duration) {
	if !f.ev.on(ctx, slog.LevelInfo) {
		return
	}
	e := Event{
		Name:    EventFaultInjected,
		Method:  req.Method,
		URL:     RedactURL(req.URL),
		Host:    hostOf(req),
		Attempt: AttemptFrom(ctx),
		Delay:   delay,
		Reason:  kind,
	}
	if kind == "abort" {
		e.Status = f.s.Abort.Status
	}
	f.ev.Emit(ctx, slog.LevelInfo, e)
}

// closeBody closes the request body of an attempt that is not sent.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
