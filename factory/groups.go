package factory

// Components shared across clients: clients whose circuit_breaker.group,
// bulkhead.group or rate_limit.group name the same group share one breaker,
// one pool of bulkhead slots or one limiter (config validation makes their
// settings equal). Which components a group can share is the component
// table's (a row with a config.GroupBlock). A group's component lives in
// the pipelines of its members; a reload plans it once (planGroups) and
// builds it once (groupTable), keeping it, and its state, while any member
// still uses it.

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

// groupViewOf returns the settings of each group the pipelines use, for
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
