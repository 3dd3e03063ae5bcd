package factory

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// The build phase of a reload: what the plan creates is built aside, in
// new pipelines of a new generation that nothing serves yet; what it keeps
// is taken from the serving pipelines untouched. Retunes of kept
// components are returned, to run once the new generation serves; a build
// that fails leaves everything serving exactly as it was.

// buildAside builds the pipelines of the generation num that t plans, by
// index as in t.names: an unchanged client keeps its serving pipeline,
// every other one gets a new pipeline (see build), the group's shared
// components built once for all members. It returns them with the retunes
// to run after the commit. On error it discards what it built.
func (r *Registry) buildAside(t *txn, num uint64) (pipes []*pipeline, retunes []func(), err error) {
	pipes = make([]*pipeline, len(t.names))
	gt := newGroupTable(t.old.pipes, t.groups)
	for i, name := range t.names {
		var prev *pipeline
		if i < len(t.old.pipes) {
			prev = t.old.pipes[i]
		}
		if t.plans[i].Action == ActionUnchanged {
			pipes[i] = prev
			continue
		}
		p, rts, err := r.build(name, t.inputs[i], t.mats[i], t.plans[i], prev, num, gt)
		if err != nil {
			discard(t.old, pipes[:i])
			return nil, nil, err
		}
		pipes[i], retunes = p, append(retunes, rts...)
	}
	return pipes, retunes, nil
}

// discard drops the pipelines a failed transaction built: it closes the
// idle connections of the base transports they made (which no request has
// used, as nothing built was ever published) and leaves old's alone.
func discard(old *generation, built []*pipeline) {
	serving := make(map[*base]bool, len(old.pipes))
	for _, p := range old.pipes {
		serving[p.base] = true
	}
	for _, p := range built {
		if p != nil && p.base != nil && !serving[p.base] {
			p.base.closeIdle()
		}
	}
}

// build makes the pipeline of client name that cp plans, from in and its
// resolved material m, touching nothing that serves: what cp keeps
// (unchanged or retuned) it takes from old, the pipeline it replaces; what
// cp starts or replaces it creates. It returns the retunes to run once the
// new generation serves, each applying in's settings to a kept stateful
// component. A panic (in code's hooks, say) is an error, and nothing built
// is live: the caller discards it.
func (r *Registry) build(name string, in clientInput, m material, cp ClientPlan, old *pipeline, gen uint64, gt *groupTable) (p *pipeline, retunes []func(), err error) {
	defer func() {
		if v := recover(); v != nil {
			p, retunes, err = nil, nil, fmt.Errorf("client %q: building pipeline panicked: %v", name, v)
		}
	}()
	c := in.cfg
	p = &pipeline{name: name, in: in, built: true, gen: gen}
	if old == nil {
		old = &pipeline{}
	}
	ev := r.events(name, "", c.Logging.Events)
	h := r.hooks(name)
	if retunes, err = r.stateful(p, old, cp, buildCtx{owner: name, section: sectionOf(name, in.defined), in: in, m: m, ev: ev, hooks: h, quotas: r.opts.Quotas}, gt); err != nil {
		return nil, nil, err
	}
	// The latencies hedging samples hold no settings: always kept.
	if p.latencies = old.latencies; p.latencies == nil {
		p.latencies = middleware.NewLatencies()
	}
	// So do the call counts, which Status reports as cumulative.
	if p.calls = old.calls; p.calls == nil {
		p.calls = new(callCounts)
	}

	var bottom http.RoundTripper = r.opts.Base
	if p.base != nil {
		bottom = p.base
	}
	// The layers, outermost first, as the README's pipeline draws them.
	// Auth, logging and fault injection are the client's, below every
	// route; each route runs its own stateless layers (timeout, retry or
	// hedge, attempt timeout, headers) around the client's components.
	lower := middleware.Chain(
		middleware.Auth(c.Auth, middleware.AuthOptions{Credential: m.cred, Events: ev}),
		middleware.Logging(c.Logging, middleware.LoggingOptions{Events: ev}),
		middleware.Fault(c.Fault, middleware.FaultOptions{Events: ev, Seed: h.FaultSeed}),
	)(bottom)
	top := r.chain(p, config.RouteConfig{Timeout: c.Timeout, Headers: c.Headers, Retry: c.Retry, Hedge: c.Hedge}, ev, h, lower)
	if len(c.Routes) > 0 {
		patterns := slices.Sorted(maps.Keys(c.Routes))
		routes, err := middleware.NewRoutes(patterns...)
		if err != nil {
			return nil, nil, fmt.Errorf("client %q: %w", name, err) // Validate rejects these first
		}
		rts := make(map[string]http.RoundTripper, len(patterns))
		for _, pat := range patterns {
			rts[pat] = r.chain(p, c.Routes[pat], ev, h, lower)
		}
		top = middleware.Router(routes, rts, top)
	}
	// Every call is counted once, as its caller sees it (one atomic add).
	// A host-less URL is resolved against base_url before any other layer,
	// code's own included, sees it: routes match the resolved URL. Every
	// error that leaves the pipeline, code's own layers' included, is
	// redacted first.
	base, err := baseURL(c.BaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("client %q: %w", name, err) // Validate rejects these first
	}
	// Coalescing comes below code's Outer middleware, which may shape the
	// request (a header from the context) and so its identity, and see
	// every caller's call; above the routes, so that one trip runs every
	// layer once.
	layers := make([]middleware.Middleware, 0, 4+len(h.Outer))
	layers = append(layers, countCalls(p.calls, c.Transport.MaxRedirects), middleware.BaseURL(base), middleware.RedactErrors())
	layers = append(layers, h.Outer...)
	layers = append(layers, middleware.Coalesce(c.Coalesce, middleware.CoalesceOptions{Events: ev, Joined: &p.calls.joined}))
	p.rt = middleware.Chain(layers...)(top)
	return p, retunes, nil
}

// stateful gives p its stateful components, row by row of the component
// table, as cp plans them, and the plan alone: old's when kept (unchanged
// or retuned), new ones when started or replaced, none when stopped or
// off; a group member's from gt, which builds each group's once, with the
// group's events and the hooks every client has (Options.Hooks): it serves
// several clients at once. It changes nothing of old's: a kept component's
// new settings are in the returned retunes, which the caller runs after the
// commit, so a reload that fails later leaves every serving component as
// it was.
func (r *Registry) stateful(p, old *pipeline, cp ClientPlan, b buildCtx, gt *groupTable) (retunes []func(), err error) {
	for _, comp := range components {
		if comp.state == nil {
			continue
		}
		plan := cp.plan(comp.name)
		var f func()
		if plan.Group != "" && has(plan.Change) {
			if p.groups == nil {
				p.groups = map[string]string{}
			}
			p.groups[comp.name] = plan.Group
			gb := b
			gb.owner, gb.ev, gb.hooks = plan.Group, r.events("", plan.Group, b.in.cfg.Logging.Events), r.opts.Hooks
			f, err = comp.state.part.share(gt, groupKey{comp.name, plan.Group}, p, gb)
		} else {
			f, err = comp.state.part.take(plan.Change, p, old, b)
		}
		if err != nil {
			return nil, err
		}
		if f != nil {
			retunes = append(retunes, f)
		}
	}
	return retunes, nil
}

// has reports whether a component with this change exists after it.
func has(ch Change) bool { return ch != Stopped && ch != Off }

// events returns the Events of client's layers (of a group's component
// when group is not ""), or of the group's own component when client is
// "", logging the events records (logging.events) says.
func (r *Registry) events(client, group string, records middleware.LogEvents) *middleware.Events {
	return &middleware.Events{Client: client, Group: group, Logger: r.log, Observer: r.opts.Observer, Records: records}
}

// take carries out one component's change: for unchanged, old; for
// retuned, old and the func that applies the new settings to it; for
// stopped and off, none; for started and replaced, a new one from start.
// A kept component old lacks (its pipeline failed to build, which the plan
// answers with started anyway) is started too.
func take[T comparable](ch Change, old T, start func() (T, error), retune func(T)) (T, func(), error) {
	var none T
	switch {
	case ch == Stopped || ch == Off:
		return none, nil, nil
	case ch == Unchanged && old != none:
		return old, nil, nil
	case ch == Retuned && old != none:
		return old, func() { retune(old) }, nil
	}
	obj, err := start()
	return obj, nil, err
}

// chain builds the layers of one route (or of the client, for calls that
// match no route) from the total timeout down to lower: the stateless
// layers from s, around p's stateful components, which every route of the
// client shares.
func (r *Registry) chain(p *pipeline, s config.RouteConfig, ev *middleware.Events, h Hooks, lower http.RoundTripper) http.RoundTripper {
	name := p.name
	tmo := middleware.TimeoutOptions{Events: ev}
	layers := make([]middleware.Middleware, 0, 12)
	layers = append(layers, middleware.Timeout(s.Timeout, tmo))
	if p.breaker != nil {
		layers = append(layers, p.breaker.MiddlewareFor(r.events(name, p.groups[ComponentBreaker], p.in.cfg.Logging.Events)))
	}
	if p.bulkhead != nil {
		layers = append(layers, p.bulkhead.MiddlewareFor(r.events(name, p.groups[ComponentBulkhead], p.in.cfg.Logging.Events)))
	}
	// Every layer below retry copies a request before it writes to it, but
	// code's attempt middleware and Options.Base may change theirs in place
	// (Hooks.Attempt and Options.Base promise each attempt its own clone).
	readOnly := len(h.Attempt) == 0 && r.opts.Base == nil
	if s.Hedge.Enabled {
		layers = append(layers, middleware.Hedge(s.Hedge, s.Retry, middleware.HedgeOptions{
			ShouldRetry: h.ShouldRetry, Budget: p.budget, Events: ev, Latencies: p.latencies, ReadOnlyBelow: readOnly,
		}))
	} else {
		layers = append(layers, middleware.Retry(s.Retry, middleware.RetryOptions{
			ShouldRetry: h.ShouldRetry, Budget: p.budget, Events: ev, Backoff: h.Backoff, ReadOnlyBelow: readOnly,
		}))
	}
	layers = append(layers, middleware.AttemptTimeout(s.Retry.AttemptTimeout, tmo))
	layers = append(layers, h.Attempt...)
	if p.limiter != nil {
		layers = append(layers, p.limiter.Layer(r.events(name, p.groups[ComponentRateLimit], p.in.cfg.Logging.Events), s.Retry.MaxBackoff))
	}
	// The time left is measured after the wait for a token, and set before
	// Headers, so that it beats a configured header of the same name on a
	// request with a deadline (the caller's own still wins; without a
	// deadline the configured value goes out).
	layers = append(layers, middleware.PropagateDeadline(p.in.cfg.Deadline))
	layers = append(layers, middleware.Headers(s.Headers, middleware.HeadersOptions{Events: ev}))
	return middleware.Chain(layers...)(lower)
}

// hooks returns the hooks of client name: Options.Hooks, then
// Options.HooksFor(name), then Options.ClientHooks[name]. Middleware add
// up in that order, outermost first; a later func or seed replaces an
// earlier one.
func (r *Registry) hooks(name string) Hooks {
	h := Hooks{}
	layers := []Hooks{r.opts.Hooks}
	if r.opts.HooksFor != nil {
		layers = append(layers, r.opts.HooksFor(name))
	}
	layers = append(layers, r.opts.ClientHooks[name])
	for _, l := range layers {
		h.Outer = append(h.Outer, l.Outer...)
		h.Attempt = append(h.Attempt, l.Attempt...)
		if l.ShouldRetry != nil {
			h.ShouldRetry = l.ShouldRetry
		}
		if l.Backoff != nil {
			h.Backoff = l.Backoff
		}
		if l.IsFailure != nil {
			h.IsFailure = l.IsFailure
		}
		if l.OnStateChange != nil {
			h.OnStateChange = l.OnStateChange
		}
		if l.FaultSeed != 0 {
			h.FaultSeed = l.FaultSeed
		}
	}
	return h
}

// groupTable builds the shared components of one new generation, each
// once, as the plan of its group says: kept (and retuned once) from the
// serving generation, or started.
type groupTable struct {
	old   map[groupKey]any // the serving generation's
	plans map[groupKey]ComponentPlan
	made  map[groupKey]any
}

// newGroupTable returns the table for a generation replacing the one whose
// pipelines are old, with plans from planGroups.
func newGroupTable(old []*pipeline, plans map[groupKey]ComponentPlan) *groupTable {
	return &groupTable{old: groupsOf(old), plans: plans, made: map[groupKey]any{}}
}

// groupsOf collects the shared components the pipelines use.
func groupsOf(pipes []*pipeline) map[groupKey]any {
	out := map[groupKey]any{}
	for _, p := range pipes {
		for name, g := range p.groups {
			if obj := componentOf(name).state.part.get(p); obj != nil {
				out[groupKey{name, g}] = obj
			}
		}
	}
	return out
}

// take returns the group's component of key, made by mk from the
// serving one (nil when none serves) the first time a member asks, with
// the retune to run after the commit (once).
func (gt *groupTable) take(key groupKey, mk func(old any) (any, func(), error)) (any, func(), error) {
	if obj, ok := gt.made[key]; ok {
		return obj, nil, nil
	}
	obj, f, err := mk(gt.old[key])
	if err != nil {
		return nil, nil, err
	}
	gt.made[key] = obj
	return obj, f, nil
}

// buildCtx is what a stateful component is built from: the input of the
// client (or of the group's first member) and, for the group's one, the
// group's events and hooks.
type buildCtx struct {
	owner   string // the client, or the group, that OnStateChange names
	section string // the key path prefix of errors
	in      clientInput
	m       material
	ev      *middleware.Events
	hooks   Hooks
	quotas  middleware.QuotaStore // Options.Quotas
}

// anyPart is a part of any component type: what build, the groups and
// Close need.
type anyPart interface {
	// take sets the component of p as ch says (see take), from old's or a
	// new one built from b; it returns the retune to run after the commit.
	take(ch Change, p, old *pipeline, b buildCtx) (func(), error)
	// share sets p's component to the group's (see groupTable.take).
	share(gt *groupTable, key groupKey, p *pipeline, b buildCtx) (func(), error)
	// get returns p's component, nil when it has none.
	get(p *pipeline) any
	// carry copies p's component to q.
	carry(q, p *pipeline)
}

// part is how one stateful component of type T is built, retuned and
// held in a pipeline.
type part[T comparable] struct {
	field  func(*pipeline) *T
	build  func(buildCtx) (T, error)
	retune func(T, clientInput)
}

func (s part[T]) take(ch Change, p, old *pipeline, b buildCtx) (func(), error) {
	obj, f, err := take(ch, *s.field(old), s.starter(b), s.retuner(b.in))
	*s.field(p) = obj
	return f, err
}

func (s part[T]) share(gt *groupTable, key groupKey, p *pipeline, b buildCtx) (func(), error) {
	obj, f, err := gt.take(key, func(old any) (any, func(), error) {
		o, _ := old.(T)
		x, f, err := take(gt.plans[key].Change, o, s.starter(b), s.retuner(b.in))
		return x, f, err
	})
	if err != nil {
		return nil, err
	}
	*s.field(p) = obj.(T)
	return f, nil
}

func (s part[T]) get(p *pipeline) any {
	var none T
	if v := *s.field(p); v != none {
		return v
	}
	return nil
}

func (s part[T]) carry(q, p *pipeline) { *s.field(q) = *s.field(p) }

func (s part[T]) starter(b buildCtx) func() (T, error) {
	return func() (T, error) { return s.build(b) }
}

func (s part[T]) retuner(in clientInput) func(T) { return func(x T) { s.retune(x, in) } }

// baseURL parses base_url; nil for "".
func baseURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return nil, errors.New("base_url: must be an absolute http or https URL")
	}
	return u, nil
}
