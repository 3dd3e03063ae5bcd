package factory

import (
	"github.com/switchboard-http/switchboard/middleware"
)

// Components shared across clients: clients whose circuit_breaker.group,
// bulkhead.group or rate_limit.group name the same group share one breaker,
// one pool of bulkhead slots or one limiter (config validation makes their
// settings equal). A group's component lives in the pipelines of its
// members; a reload plans it once (planGroups) and builds it once
// (groupTable), keeping it, and its state, while any member still uses it.

// shared is one group's components; only the one of its block is set.
type shared struct {
	breaker  *middleware.Breaker
	bulkhead *middleware.Bulkhead
	limiter  *middleware.RateLimit
}

// groupTable builds the shared components of one new generation, each
// once, as the plan of its group says: kept (and retuned once) from the
// serving generation, or started.
type groupTable struct {
	old   map[groupKey]*shared // the serving generation's
	plans map[groupKey]ComponentPlan
	made  map[groupKey]*shared
}

// newGroupTable returns the table for a generation replacing the one whose
// pipelines are old, with plans from planGroups.
func newGroupTable(old []*pipeline, plans map[groupKey]ComponentPlan) *groupTable {
	return &groupTable{old: groupsOf(old), plans: plans, made: map[groupKey]*shared{}}
}

// groupsOf collects the shared components the pipelines use.
func groupsOf(pipes []*pipeline) map[groupKey]*shared {
	out := map[groupKey]*shared{}
	for _, p := range pipes {
		if g := p.groups[0]; g != "" && p.breaker != nil {
			out[groupKey{ComponentBreaker, g}] = &shared{breaker: p.breaker}
		}
		if g := p.groups[1]; g != "" && p.bulkhead != nil {
			out[groupKey{ComponentBulkhead, g}] = &shared{bulkhead: p.bulkhead}
		}
		if g := p.groups[2]; g != "" && p.limiter != nil {
			out[groupKey{ComponentRateLimit, g}] = &shared{limiter: p.limiter}
		}
	}
	return out
}

// groupView returns the settings of each group the pipelines use, for
// planGroups.
func groupViewOf(pipes []*pipeline) groupView {
	v := groupView{}
	for _, p := range pipes {
		if p.built {
			v.add(p.in.cfg)
		}
	}
	return v
}

// component returns the group's component of key's block, built the first
// time a member asks, with the retune to run after the commit (once).
func groupComponent[T comparable](gt *groupTable, key groupKey, get func(*shared) T, set func(*shared, T), start func() T, retune func(T)) (T, func()) {
	if s, ok := gt.made[key]; ok {
		return get(s), nil
	}
	var old T
	if s, ok := gt.old[key]; ok {
		old = get(s)
	}
	obj, f := take(gt.plans[key].Change, old, start, retune)
	s := &shared{}
	set(s, obj)
	gt.made[key] = s
	return obj, f
}
