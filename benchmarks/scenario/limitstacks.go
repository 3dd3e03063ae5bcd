package scenario

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/failsafehttp"

	"github.com/switchboard-http/switchboard/benchmarks"
	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// The stacks of the capacity and coalescing scenarios. The switchboard ones
// are built from config keys, as ops would write them (see keyStack), over
// the transport block below; failsafe-go gets benchmarks.NewTransport() with
// the same pool sizes.
//
//   - switchboard-static-16, switchboard-static-128:
//     `bulkhead: {max_concurrent: 16}` and 128; max_wait 0 (the default), so
//     a call that finds every slot taken is refused at once.
//   - switchboard-adaptive: `bulkhead: {mode: adaptive, min_limit: 1,
//     max_limit: 200, initial_limit: 20}`, max_wait 0.
//   - failsafe-go-adaptive: failsafe-go's adaptivelimiter wired as a
//     failsafe-go user wires a policy for HTTP, through
//     failsafehttp.NewRoundTripper (its permit ends when RoundTrip
//     returns; switchboard's when the body ends), with the same limits (WithLimits(1, 200, 20), which are also its defaults) and
//     every other setting at its default: no queueing (a call over the limit
//     is refused at once with adaptivelimiter.ErrExceeded), a recent window
//     of 1 s to 30 s and at least 50 samples.
//   - switchboard-defaults and switchboard-coalesce: the defaults, and the
//     defaults plus `coalesce: {enabled: true}`.
//
// The switchboard stacks keep the rest of the defaults (retry, budget,
// the 30 s timeout); the backend answers every request 200 and a refusal is
// never retried, so retry never acts. Every stack's connection pool keeps
// up to 256 idle connections per host (switchboard's default is 16): the
// pool is the same for all, and big enough that no stack pays for new
// connections beyond its limit.
const (
	NameStatic16            = "switchboard-static-16"
	NameStatic128           = "switchboard-static-128"
	NameSwitchboardAdaptive = "switchboard-adaptive"
	NameFailsafeAdaptive    = "failsafe-go-adaptive"
	NameSwitchboardCoalesce = "switchboard-coalesce"
)

// idleConns is every scenario stack's pool of idle connections per host
// (and in all) in the capacity and coalescing scenarios.
const idleConns = 256

// LimitStack is a stack whose concurrency limit can be read while it runs.
type LimitStack struct {
	benchmarks.Stack
	// Limit returns the stack's concurrency limit now. Safe for
	// concurrent use.
	Limit func() int
}

// CapacityNames lists the stacks of the capacity scenario in the table's
// order.
func CapacityNames() []string {
	return []string{NameStatic16, NameStatic128, NameSwitchboardAdaptive, NameFailsafeAdaptive}
}

// CoalesceNames lists the stacks of the coalescing scenario in the table's
// order.
func CoalesceNames() []string {
	return []string{NameSwitchboardDefaults, NameSwitchboardCoalesce}
}

// NewLimitStack builds a fresh stack called name (one of CapacityNames or
// CoalesceNames) with a network transport of its own. A non-empty skip says
// why the stack cannot run in this build, and the LimitStack is then zero.
func NewLimitStack(name string) (s LimitStack, skip string, err error) {
	switch name {
	case NameStatic16:
		return keyStack(name, map[string]any{"bulkhead": map[string]any{"max_concurrent": 16}})
	case NameStatic128:
		return keyStack(name, map[string]any{"bulkhead": map[string]any{"max_concurrent": 128}})
	case NameSwitchboardAdaptive:
		return keyStack(name, map[string]any{"bulkhead": map[string]any{
			"mode": "adaptive", "min_limit": 1, "max_limit": 200, "initial_limit": 20,
		}})
	case NameFailsafeAdaptive:
		return failsafeAdaptive(), "", nil
	case NameSwitchboardDefaults:
		return keyStack(name, map[string]any{})
	case NameSwitchboardCoalesce:
		return keyStack(name, map[string]any{"coalesce": map[string]any{"enabled": true}})
	}
	return LimitStack{}, "", fmt.Errorf("no stack %q", name)
}

// keyStack builds switchboard's client "svc" from the config tree blocks
// (shaped like the YAML file's clients.svc) plus the scenarios' transport
// block. A build that rejects one of blocks' keys as unknown (a feature not
// merged yet) skips the stack with that error as the reason; any other
// error fails the run.
func keyStack(name string, blocks map[string]any) (LimitStack, string, error) {
	svc := map[string]any{"transport": map[string]any{
		"max_idle_conns": idleConns, "max_idle_conns_per_host": idleConns,
	}}
	for k, v := range blocks {
		svc[k] = v
	}
	cfg, err := config.Loader{Sources: []config.Source{treeSource{"clients": map[string]any{"svc": svc}}}}.Load()
	if err != nil {
		for _, fe := range config.FieldErrors(err) {
			if strings.Contains(fe.Msg, "unknown key") {
				return LimitStack{}, fmt.Sprintf("skipped: this build does not know the key %s (%s); the feature is not merged yet", fe.Path, fe.Msg), nil
			}
		}
		return LimitStack{}, "", fmt.Errorf("%s: %w", name, err)
	}
	r, err := factory.New(cfg, factory.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return LimitStack{}, "", fmt.Errorf("%s: %w", name, err)
	}
	limit := func() int {
		for _, c := range r.Status().Clients {
			if c.Name == "svc" {
				return c.BulkheadLimit
			}
		}
		return 0
	}
	return LimitStack{Stack: benchmarks.Stack{Name: name, Doer: r.Get("svc"), Close: func() { r.Close() }}, Limit: limit}, "", nil
}

// failsafeAdaptive is failsafe-go's adaptive limiter through failsafehttp,
// with the limits of switchboard-adaptive and failsafe-go's defaults for
// everything else.
func failsafeAdaptive() LimitStack {
	t := benchmarks.NewTransport()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = idleConns, idleConns
	limiter := adaptivelimiter.NewBuilder[*http.Response]().WithLimits(1, 200, 20).Build()
	return LimitStack{
		Stack: benchmarks.Stack{
			Name:  NameFailsafeAdaptive,
			Doer:  &http.Client{Transport: failsafehttp.NewRoundTripper(t, limiter)},
			Close: t.CloseIdleConnections,
		},
		Limit: limiter.Limit,
	}
}
