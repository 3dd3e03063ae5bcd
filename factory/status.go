package factory

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Status is a snapshot of a registry for ops: what generation serves, how
// the last reload went, and each client's state. It holds no secrets.
type Status struct {
	// Generation counts applied configs; the first one is 1.
	Generation uint64 `json:"generation"`
	// LastReload is when the last reload attempt (or the first load) ended.
	LastReload time.Time `json:"last_reload"`
	// LastError is why the last reload attempt was rejected; nil when it
	// was applied. The generation above keeps serving either way.
	LastError error `json:"-"`
	// Clients lists every client handed out or defined, sorted by name.
	Clients []ClientStatus `json:"clients"`
}

// ClientStatus is the state of one client.
type ClientStatus struct {
	Name string `json:"name"`
	// Defined is true when the config has a section for the client; false
	// for a name only seen by Get, which follows defaults.
	Defined bool `json:"defined"`
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
	// BulkheadInUse and BulkheadLimit are the bulkhead's slots in use and
	// its size; both 0 when it is off.
	BulkheadInUse int `json:"bulkhead_in_use"`
	BulkheadLimit int `json:"bulkhead_limit"`
	// LimiterTokens is how many rate-limit tokens are available now; nil
	// when the rate limit is off (never +Inf, which JSON cannot encode).
	LimiterTokens *float64 `json:"limiter_tokens,omitempty"`
}

// Status returns a snapshot of the registry. It is safe for concurrent use.
func (r *Registry) Status() Status {
	s, _ := r.snapshot()
	return s
}

// snapshot returns the status and, for each of its clients in the same
// order, the serving pipeline: one consistent generation.
func (r *Registry) snapshot() (Status, []*pipeline) {
	r.mu.Lock()
	s := Status{LastReload: r.lastReload, LastError: r.lastErr}
	r.mu.Unlock()
	// Each pipeline carries its client's name, so the generation alone is a
	// consistent view: a Get adding a name meanwhile cannot skew it.
	g := r.gen.Load()
	s.Generation = g.num
	s.Clients = make([]ClientStatus, 0, len(g.pipes))
	pipes := slices.Clone(g.pipes)
	for _, p := range pipes {
		cs := ClientStatus{Name: p.name, Defined: p.defined, ConfigHash: p.configHash(), Generation: p.gen}
		if p.budget != nil {
			cs.BudgetBalance = p.budget.Balance()
		}
		if p.breaker != nil {
			states := p.breaker.States()
			cs.Breaker = make(map[string]string, len(states))
			for host, st := range states {
				cs.Breaker[host] = st.String()
			}
		}
		if p.bulkhead != nil {
			cs.BulkheadInUse, cs.BulkheadLimit = p.bulkhead.InUse(), p.bulkhead.Limit()
		}
		if p.limiter != nil {
			if tokens := p.limiter.Tokens(); !math.IsInf(tokens, 0) && !math.IsNaN(tokens) {
				cs.LimiterTokens = &tokens
			}
		}
		s.Clients = append(s.Clients, cs)
	}
	// Sort both by name together (names are unique).
	idx := make([]int, len(s.Clients))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(s.Clients[a].Name, s.Clients[b].Name) })
	clients := make([]ClientStatus, len(idx))
	sorted := make([]*pipeline, len(idx))
	for i, j := range idx {
		clients[i], sorted[i] = s.Clients[j], pipes[j]
	}
	s.Clients = clients
	return s, sorted
}
