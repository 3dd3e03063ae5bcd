package factory

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// Status is a snapshot of a registry for ops: what generation serves, how
// the last reload went, and each client's state. It holds no secrets: every
// value that could carry one is redacted when the snapshot is taken (see
// ClientStatus.Config; LastError is redacted as the reload records it), so
// that every fmt verb (%v, %+v, %#v, %s), slog handler and encoding/json
// prints REDACTED in its place. A plain value.
type Status struct {
	// Generation counts applied configs; the first one is 1.
	Generation uint64 `json:"generation"`
	// LastReload is when the serving generation was applied (by Open, New,
	// Apply or a reload). A rejected reload does not change it, nor
	// anything else here but LastError.
	LastReload time.Time `json:"last_reload"`
	// LastError is why the last reload attempt was rejected; nil when it
	// was applied (or found the inputs unchanged). The generation above
	// keeps serving either way.
	LastError error `json:"-"`
	// Clients lists every client handed out or defined, sorted by name.
	Clients []ClientStatus `json:"clients"`
	// Sources lists Options.Sources in order, each with whether its last
	// good snapshot serves in place of a Read that failed. Nil without
	// Sources.
	Sources []SourceStatus `json:"sources,omitempty"`
	// Reloads are the last MaxReloadRecords (20) reload attempts, newest
	// first: the first load, then every applied or rejected Apply or
	// reload (see ReloadRecord).
	Reloads []ReloadRecord `json:"-"`
}

// ClientStatus is the state of one client. It holds no secrets (see
// Config). A plain value.
type ClientStatus struct {
	Name string `json:"name"`
	// Defined is true when the config has a section for the client; false
	// for a name only seen by Get, which follows defaults.
	Defined bool `json:"defined"`
	// Config is the client's effective config, as its pipeline serves it
	// (defaults merged in), with every secret already replaced by REDACTED
	// (config.ClientConfig.Redacted: every value the key table marks as
	// secret-bearing, the client's and each route's), so that no printer
	// or encoder can show one. An empty value stays empty, so that "none
	// set" shows. Handler shows it under "config".
	Config config.ClientConfig `json:"-"`
	// ConfigHash is the digest of the client's effective config.
	ConfigHash string `json:"config_hash"`
	// Generation is the generation that built the client's current pipeline.
	Generation uint64 `json:"generation"`
	// BudgetBalance is how many retries the retry budget would allow now;
	// +Inf when the budget is off (retry.budget.ttl 0). JSON has no
	// infinity: MarshalJSON writes null for it.
	BudgetBalance float64 `json:"budget_balance"`
	// Breaker maps each breaker to its state ("closed", "open",
	// "half_open"): the key is "" for scope client, the URL host for scope
	// host. Nil when the breaker is off.
	Breaker map[string]string `json:"breaker,omitempty"`
	// BreakerRejectProbability maps each breaker, keyed as Breaker, to the
	// probability that its next call is rejected locally, in mode adaptive
	// (client-side throttling); nil in the other modes.
	BreakerRejectProbability map[string]float64 `json:"breaker_reject_probability,omitempty"`
	// BulkheadInUse and BulkheadLimit are the bulkhead's slots in use and
	// its size, the learned limit in mode adaptive; both 0 when it is off.
	// BulkheadMode is "static" or "adaptive" while it is on, "" when off.
	BulkheadInUse int    `json:"bulkhead_in_use"`
	BulkheadLimit int    `json:"bulkhead_limit"`
	BulkheadMode  string `json:"bulkhead_mode,omitempty"`
	// LimiterTokens is how many rate-limit tokens are available now; nil
	// when the rate limit is off (never +Inf, which JSON cannot encode).
	LimiterTokens *float64 `json:"limiter_tokens,omitempty"`
	// QuotaMode is, for a rate limit with scope fleet, "store" while its
	// decisions come from Options.Quotas and "fallback" while the store
	// fails (rate_limit.on_store_error applies); "" otherwise.
	QuotaMode string `json:"quota_mode,omitempty"`
	// Groups maps each component the client shares with other clients
	// (circuit_breaker, bulkhead, rate_limit) to its group; nil when it
	// shares none. A shared component's state above is the group's.
	Groups map[string]string `json:"groups,omitempty"`
	// Fault is the client's fault injection while it is on (fault.enabled),
	// so that a game day left running shows; nil when it is off.
	Fault *middleware.FaultSettings `json:"fault,omitempty"`
	// Routes lists the patterns of the client's routes, sorted; each
	// route's effective settings are in Config.Routes. Nil without routes.
	Routes []string `json:"routes,omitempty"`
	// Calls counts the client's logical calls since the registry was made
	// (across reloads), each once it returned to its caller, whatever
	// its outcome (middleware.Classify). Failures counts those whose
	// outcome was a failure (OutcomeFailure or OutcomePermanent: a status
	// >= 500, a transport error, the client's timeout), Rejections those
	// refused locally (OutcomeRejected: breaker open, bulkhead full, rate
	// limited). A redirected call counts once, at the hop that ends it
	// (middleware.WillBeFollowed, within transport.max_redirects).
	// Counting costs one atomic add per call. A rate is the
	// difference of two snapshots over their time apart.
	Calls      uint64 `json:"calls"`
	Failures   uint64 `json:"failures"`
	Rejections uint64 `json:"rejections"`
	// CoalesceJoined counts the client's calls, since the registry was
	// made (across reloads), that joined a coalesced trip already under
	// way (coalesce.enabled), as they join: one that then left, or sent
	// its own request for an answer over max_body, counts too. Each is
	// also one of Calls. 0 while coalescing is off.
	CoalesceJoined uint64 `json:"coalesce_joined"`
	// BreakerProbeIn maps each open breaker, keyed as Breaker, to how long
	// until it lets its next probe through; breakers that are not open
	// are left out. Nil when the breaker is off.
	BreakerProbeIn map[string]time.Duration `json:"-"`
	// HedgeDelay is the wait before each extra copy of a hedged call now
	// (middleware.HedgeDelay: hedge.delay, or the hedge.delay_percentile
	// of the client's recent latencies when longer); 0 when hedging is off.
	// Routes with their own hedge settings are in Config.Routes.
	HedgeDelay time.Duration `json:"-"`
	// NonDefault lists every key of Config whose value differs from the
	// built-in defaults (config.Default()), in the order of the file format,
	// each with where it came from; nil when none does.
	NonDefault []ConfigKey `json:"-"`
}

// ConfigKey is one key of a client's effective config that differs from
// the built-in default, with its provenance. It holds no secret: a secret
// value reads REDACTED, as in Config. A plain value.
type ConfigKey struct {
	// Key is the dotted path within the client section
	// ("retry.max_retries", "headers.User-Agent", a route's key).
	Key string
	// Value and Default are the effective and the built-in value as written
	// in YAML (config.Setting.Text); "" for a header the defaults lack.
	Value, Default string
	// Origin is the layer that set the value (a client key its own section
	// did not set has the Origin of the `defaults` key it inherited); the
	// zero Origin, with Known false, when the config came from code
	// (New, or Apply of a Config that Load did not make), which keeps no
	// provenance.
	Origin config.Origin
	Known  bool
}

// Status returns a snapshot of the registry: one consistent generation
// (each pipeline carries its client's name, so a Get adding a name meanwhile
// cannot skew it). It is safe for concurrent use.
func (r *Registry) Status() Status {
	r.mu.Lock()
	s := Status{LastReload: r.lastReload, LastError: r.lastErr, Reloads: r.reloadLog.list()}
	g := r.gen.Load() // with LastReload and LastError: what they describe
	s.Sources = r.sources.status()
	r.mu.Unlock()
	s.Generation = g.num
	s.Clients = make([]ClientStatus, 0, len(g.pipes))
	for _, p := range g.pipes {
		cs := ClientStatus{Name: p.name, Defined: p.in.defined, Config: shownConfig(p.in.cfg), ConfigHash: p.configHash(), Generation: p.gen}
		cs.BudgetBalance = math.Inf(1) // no budget: every retry allowed
		if p.budget != nil {
			cs.BudgetBalance = p.budget.Balance()
		}
		if p.breaker != nil {
			states := p.breaker.States()
			cs.Breaker = make(map[string]string, len(states))
			for host, st := range states {
				cs.Breaker[host] = st.String()
			}
			if p.in.cfg.CircuitBreaker.Mode == middleware.BreakerAdaptive {
				cs.BreakerRejectProbability = p.breaker.Probabilities()
			}
			cs.BreakerProbeIn = p.breaker.ProbeIn()
		}
		cs.Calls, cs.Failures, cs.Rejections = p.calls.totals()
		cs.CoalesceJoined = p.calls.coalesced()
		if p.in.cfg.Hedge.Enabled {
			cs.HedgeDelay = middleware.HedgeDelay(p.in.cfg.Hedge, p.latencies)
		}
		cs.NonDefault = p.nonDefault(g.cfg.Provenance)
		if p.bulkhead != nil {
			cs.BulkheadInUse, cs.BulkheadLimit = p.bulkhead.InUse(), p.bulkhead.Limit()
			cs.BulkheadMode = string(p.bulkhead.Mode())
		}
		if len(p.in.cfg.Routes) > 0 {
			cs.Routes = slices.Sorted(maps.Keys(p.in.cfg.Routes))
		}
		if f := p.in.cfg.Fault; f.Enabled {
			cs.Fault = &f
		}
		cs.Groups = p.groupNames()
		if p.limiter != nil {
			if tokens := p.limiter.Tokens(); !math.IsInf(tokens, 0) && !math.IsNaN(tokens) {
				cs.LimiterTokens = &tokens
			}
			cs.QuotaMode = p.limiter.QuotaMode()
		}
		s.Clients = append(s.Clients, cs)
	}
	slices.SortFunc(s.Clients, func(a, b ClientStatus) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// shownConfig returns c as ClientStatus.Config shows it: every value
// the key table marks as secret-bearing redacted (config.ClientConfig.Redacted),
// routes included. c's maps are not changed; the result has its own.
func shownConfig(c config.ClientConfig) config.ClientConfig { return c.Redacted() }

// nonDefault returns ClientStatus.NonDefault of p: the keys whose values
// differ from the built-in defaults (config.ChangedKeys, which never
// returns a secret), computed once per pipeline, each with its origin in
// prov, the provenance of the serving generation (nil: none known).
func (p *pipeline) nonDefault(prov *config.Provenance) []ConfigKey {
	if !p.built {
		return nil
	}
	p.changedOnce.Do(func() { p.changed = config.ChangedKeys(config.Default(), p.in.cfg) })
	if len(p.changed) == 0 {
		return nil
	}
	out := make([]ConfigKey, len(p.changed))
	for i, kc := range p.changed {
		out[i] = ConfigKey{Key: kc.Key, Value: kc.New, Default: kc.Old}
		if p.in.defined {
			out[i].Origin, out[i].Known = prov.Of(p.name, kc.Key)
		} else {
			out[i].Origin, out[i].Known = prov.Default(kc.Key)
		}
	}
	return out
}
