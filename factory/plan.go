package factory

import (
	"maps"
	"slices"
	"strings"

	"github.com/switchboard-http/switchboard/config"
)

// Action is what a reload does to one named client. The zero value "" is
// not an action Plan returns.
type Action string

// The actions, as Plan reports them.
const (
	// ActionAdded: the new config defines a client the old one did not; it
	// gets a fresh pipeline.
	ActionAdded Action = "added"
	// ActionRemoved: the new config no longer defines the client. Its
	// *http.Client keeps working for code that holds it, now following
	// `defaults`; Components compare its old settings with the new defaults.
	ActionRemoved Action = "removed"
	// ActionChanged: the client's effective config changed; its pipeline is
	// rebuilt, reusing what Components says is kept.
	ActionChanged Action = "changed"
	// ActionUnchanged: same effective config; the pipeline is untouched.
	ActionUnchanged Action = "unchanged"
)

// Change is what a reload does to one component of a client's pipeline.
// The zero value "" is not a change Plan returns.
type Change string

// The changes, as Plan reports them.
const (
	// Unchanged: the component's settings are the same; it is kept as is,
	// with its state (breaker state, budget and limiter tokens, bulkhead
	// slots, the transport's warm connections).
	Unchanged Change = "unchanged"
	// Retuned: its settings changed and it is kept, with the new settings
	// applied in place; a stateful one keeps its state (an open breaker
	// stays open).
	Retuned Change = "retuned"
	// Started: it is new, with fresh state (switched on, or a new client).
	Started Change = "started"
	// Stopped: it is switched off; its state is dropped, so switching it on
	// again starts fresh.
	Stopped Change = "stopped"
	// Off: it is off before and after.
	Off Change = "off"
	// Replaced: the base transport only: its transport or tls block changed,
	// so a new *http.Transport serves new requests and the old one closes
	// its connections once its last in-flight request ends.
	Replaced Change = "replaced"
)

// The components of a pipeline, in pipeline order, as ComponentPlan names
// them. Each covers the keys under the key path of the same name, except
// "retry" (retry.* but not retry.budget.*), "budget" (retry.budget.*) and
// "transport" (transport.* and tls.*).
const (
	ComponentTimeout   = "timeout"
	ComponentBreaker   = "circuit_breaker"
	ComponentBulkhead  = "bulkhead"
	ComponentRetry     = "retry"
	ComponentBudget    = "budget"
	ComponentRateLimit = "rate_limit"
	ComponentHeaders   = "headers"
	ComponentAuth      = "auth"
	ComponentLogging   = "logging"
	ComponentTransport = "transport"
)

// components lists every component in pipeline order with the key path
// prefixes it covers.
var components = []struct {
	name     string
	prefixes []string
}{
	{ComponentTimeout, []string{"timeout"}},
	{ComponentBreaker, []string{"circuit_breaker"}},
	{ComponentBulkhead, []string{"bulkhead"}},
	{ComponentRetry, []string{"retry"}},
	{ComponentBudget, []string{"retry.budget"}},
	{ComponentRateLimit, []string{"rate_limit"}},
	{ComponentHeaders, []string{"headers"}},
	{ComponentAuth, []string{"auth"}},
	{ComponentLogging, []string{"logging"}},
	{ComponentTransport, []string{"transport", "tls"}},
}

// ClientPlan is what a reload does to one named client. A plain value.
type ClientPlan struct {
	// Name is the client's name.
	Name string
	// Action is added, removed, changed or unchanged.
	Action Action
	// Keys lists the effective keys whose values change, old → new, with
	// secrets redacted (see config.ChangedKeys). For a removed client the
	// new values are the new defaults; for an added one, Keys is nil.
	Keys []config.KeyChange
	// Components says, in pipeline order, what happens to each component.
	// Nil for an unchanged client (everything is kept).
	Components []ComponentPlan
}

// ComponentPlan is what a reload does to one component of a pipeline.
type ComponentPlan struct {
	// Component is one of the Component… names.
	Component string
	// Change is what happens to it.
	Change Change
}

// Component returns the change of the named component, or Unchanged when
// p has no entry for it (an unchanged client).
func (p ClientPlan) Component(name string) Change {
	for _, c := range p.Components {
		if c.Component == name {
			return c.Change
		}
	}
	return Unchanged
}

// Plan returns what a reload from old to new would do, one ClientPlan per
// client that either defines, sorted by name. It applies Registry.Apply's
// rules without building anything:
//
//   - a client whose effective config did not change
//     (config.ClientConfig.Equal) keeps its pipeline untouched;
//   - within a changed client, the base transport and its connections are
//     kept unless the transport or tls block changed;
//   - the retry budget is always kept, retuned in place when retry.budget
//     changed;
//   - the circuit breaker, bulkhead and rate limiter are kept and retuned
//     in place while they stay on, started fresh when switched on (enabled,
//     max_concurrent > 0, requests_per_second > 0), and dropped when
//     switched off;
//   - the stateless layers (timeout, retry, headers, auth, logging) are
//     built from the new settings.
//
// Plan sees the configs only. At a real reload the contents of the files
// they name count too: a rotated token or password file rebuilds the
// client's pipeline, and a changed CA bundle or key pair replaces its
// transport, with the same names in both configs.
//
// A client the new config drops keeps working, following `defaults`, so
// it is planned against the new defaults. Plan assumes that code has not
// already called Get for an added name (such a client followed the old
// defaults and would keep the components that allows), and it ignores
// Options.Base, with which no transport is built. It validates nothing:
// Apply rejects an invalid new config and then nothing changes. It is safe
// for concurrent use.
func Plan(old, new config.Config) []ClientPlan {
	names := slices.Sorted(maps.Keys(old.Clients))
	for name := range new.Clients {
		if _, ok := old.Clients[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]ClientPlan, 0, len(names))
	for _, name := range names {
		oc, inOld := old.Clients[name]
		nc, inNew := new.Clients[name]
		switch {
		case !inOld:
			out = append(out, ClientPlan{Name: name, Action: ActionAdded, Components: fresh(nc)})
		case !inNew:
			p := planChanged(name, oc, new.Defaults)
			p.Action = ActionRemoved
			out = append(out, p)
		case oc.Equal(nc):
			out = append(out, ClientPlan{Name: name, Action: ActionUnchanged})
		default:
			out = append(out, planChanged(name, oc, nc))
		}
	}
	return out
}

// fresh plans a pipeline built from nothing.
func fresh(c config.ClientConfig) []ComponentPlan {
	out := make([]ComponentPlan, 0, len(components))
	for _, comp := range components {
		ch := Started
		if on, stateful := switchedOn(comp.name, c); stateful && !on {
			ch = Off
		}
		out = append(out, ComponentPlan{Component: comp.name, Change: ch})
	}
	return out
}

// planChanged plans the rebuild of a client from oc to nc, as build and
// carry do it.
func planChanged(name string, oc, nc config.ClientConfig) ClientPlan {
	keys := config.ChangedKeys(oc, nc)
	p := ClientPlan{Name: name, Action: ActionChanged, Keys: keys}
	for _, comp := range components {
		changed := false
		for _, k := range keys {
			if covers(comp.name, comp.prefixes, k.Key) {
				changed = true
				break
			}
		}
		ch := Unchanged
		if changed {
			ch = Retuned
		}
		if comp.name == ComponentTransport && changed {
			ch = Replaced
		}
		if wasOn, stateful := switchedOn(comp.name, oc); stateful {
			isOn, _ := switchedOn(comp.name, nc)
			switch {
			case !wasOn && !isOn:
				ch = Off
			case !wasOn:
				ch = Started
			case !isOn:
				ch = Stopped
			}
		}
		p.Components = append(p.Components, ComponentPlan{Component: comp.name, Change: ch})
	}
	return p
}

// covers reports whether key belongs to the component: under one of its
// prefixes, and for retry not under retry.budget.
func covers(name string, prefixes []string, key string) bool {
	if name == ComponentRetry && strings.HasPrefix(key, "retry.budget.") {
		return false
	}
	for _, p := range prefixes {
		if key == p || strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

// switchedOn reports, for a component that exists only while switched on
// (breaker, bulkhead, rate limit), whether c switches it on; stateful is
// false for every other component.
func switchedOn(name string, c config.ClientConfig) (on, stateful bool) {
	switch name {
	case ComponentBreaker:
		return c.CircuitBreaker.Enabled, true
	case ComponentBulkhead:
		return c.Bulkhead.MaxConcurrent > 0, true
	case ComponentRateLimit:
		return c.RateLimit.RequestsPerSecond > 0, true
	}
	return false, false
}
