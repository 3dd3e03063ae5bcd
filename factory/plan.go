package factory

// The plan phase of a reload: pure, from the inputs (each client's config
// and its files' digests, what serves now) to what changes, read from the
// component table (components.go). Registry.Apply, Reload and Plan, Get's
// add of a name, and the CLI's diff (through Plan) all run planAll.

import (
	"crypto/sha256"
	"maps"
	"slices"
	"strings"

	"github.com/switchboard-http/switchboard/config"
)

// Action is what a reload does to one named client. The zero value "" is
// not an action a plan holds.
type Action string

// The actions, as a plan reports them.
const (
	// ActionAdded: the new config defines a client the serving one did not.
	// Its components are planned against what served the name before (the
	// pipeline of a name code had already asked for with Get, which
	// followed `defaults`), or started fresh.
	ActionAdded Action = "added"
	// ActionRemoved: the new config no longer defines the client. Its
	// *http.Client keeps working for code that holds it, now following
	// `defaults`; Components compare its old settings with the new defaults.
	ActionRemoved Action = "removed"
	// ActionChanged: the client's effective config, or the content of a
	// secret or TLS file it names, changed; its pipeline is rebuilt, reusing
	// what Components says is kept.
	ActionChanged Action = "changed"
	// ActionUnchanged: same effective config and files; the pipeline is
	// untouched.
	ActionUnchanged Action = "unchanged"
)

// Change is what a reload does to one component of a client's pipeline.
// The zero value "" is not a change a plan holds.
type Change string

// The changes, as a plan reports them.
const (
	// Unchanged: the component's settings are the same; it is kept as is,
	// with its state (breaker state, budget and limiter tokens, bulkhead
	// slots, the transport's warm connections).
	Unchanged Change = "unchanged"
	// Retuned: its settings changed. A stateful component (breaker,
	// bulkhead, rate limit, budget) is kept and its new settings are
	// applied in place once the new generation serves, keeping its state
	// (an open breaker stays open). A stateless layer (timeout, retry,
	// headers, auth, logging, fault) is rebuilt from the new settings. The
	// transport's max_redirects and max_conn_age are retuned on the kept
	// transport.
	Retuned Change = "retuned"
	// Started: it is new, with fresh state (switched on, or a new client);
	// for a client that joins a group (Reason says so), it is the group's
	// component, with the group's state.
	Started Change = "started"
	// Stopped: it is switched off; its state is dropped, so switching it on
	// again starts fresh.
	Stopped Change = "stopped"
	// Off: it is off before and after.
	Off Change = "off"
	// Replaced: a new component with fresh state replaces the serving one:
	// the base transport when its transport or tls block or the TLS files'
	// contents changed (the old one closes its connections once its last
	// in-flight request ends), or a breaker whose scope changed (one
	// breaker per client and one per host share no state).
	Replaced Change = "replaced"
)

// ClientPlan is what a reload does to one named client. A plain value.
type ClientPlan struct {
	// Name is the client's name.
	Name string
	// Action is added, removed, changed or unchanged.
	Action Action
	// Keys lists the effective keys whose values change, old → new, with
	// secrets redacted (see config.ChangedKeys). For a removed client the
	// new values are the new defaults; for a client with nothing serving
	// before it, Keys is nil.
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
	// Reason says why, for ops: the first key that changed, or what
	// switched the component on or off. "" when it is unchanged or off.
	Reason string
	// Group is the group whose shared component the client uses (breaker,
	// bulkhead and rate limit with a `group`); "" for the client's own.
	// For a member that stays in its group, Change is what happens to the
	// group's component, the same for every member; one that joins or
	// leaves a group gets Replaced (Started when it had none before).
	Group string
}

// plan returns the ComponentPlan of the named component, or an unchanged
// one when p has no entry for it (an unchanged client).
func (p ClientPlan) plan(name string) ComponentPlan {
	for _, c := range p.Components {
		if c.Component == name {
			return c
		}
	}
	return ComponentPlan{Component: name, Change: Unchanged}
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

// Plan returns what a reload from old to new does, one ClientPlan per
// client that either defines, sorted by name. It runs the very plan
// Registry.Apply executes, read from the component table (see
// Registry.Plan for a registry's own plan):
//
//   - a client whose effective config did not change
//     (config.ClientConfig.Equal) keeps its pipeline untouched;
//   - within a changed client, the base transport and its connections are
//     kept unless the transport block (but for max_redirects and
//     max_conn_age, retuned in place) or the tls block changed;
//   - the retry budget is always kept, retuned in place when retry.budget
//     changed;
//   - the circuit breaker, bulkhead and rate limiter are kept and retuned
//     in place while they stay on, started fresh when switched on (enabled,
//     max_concurrent > 0, requests_per_second > 0), and dropped when
//     switched off; a breaker whose scope changes, or whose mode goes into
//     or out of adaptive, is replaced;
//   - a group's shared component is decided once for the group and kept
//     while any member uses it;
//   - the stateless layers (timeout, retry or hedge, headers, auth,
//     logging, fault) are built from the new settings, and so are the routes'
//     (a change of routes only retunes "routes": the breaker, budget and
//     transport stay); the latencies hedging samples are always kept.
//
// Plan sees the configs only. A registry's reload also sees the contents
// of the files they name: a rotated token or password file changes the
// client (auth retuned), and a changed CA bundle or key pair replaces its
// transport, with the same names in both configs.
//
// A client the new config drops keeps working, following `defaults`, so
// it is planned against the new defaults. Plan assumes that code has not
// called Get for a name only new defines (Registry.Plan knows), and that
// Options.Base is not set (with it, no transport is built). It validates
// nothing: Apply rejects an invalid new config and then nothing changes.
// It is safe for concurrent use.
func Plan(old, new config.Config) []ClientPlan {
	names := slices.Sorted(maps.Keys(old.Clients))
	for name := range new.Clients {
		if _, ok := old.Clients[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	was := make([]*serving, len(names))
	inputs := make([]clientInput, len(names))
	oldGroups := groupView{}
	for i, name := range names {
		if oc, ok := old.Clients[name]; ok {
			oldGroups.add(oc)
			was[i] = &serving{in: clientInput{cfg: oc, defined: true}, built: true}
		}
		nc, defined := new.Client(name)
		inputs[i] = clientInput{cfg: nc, defined: defined}
	}
	plans, _ := planAll(names, was, inputs, oldGroups, false)
	return plans
}

// planAll is the one plan of a reload, and of Get's add of a name: for
// each client names[i], what serves it now (was[i], nil for nothing) and
// what it is built from next (inputs[i], its files' digests included), the
// groups that serve now (oldGroups), and whether Options.Base replaces the
// transport (withBase), it returns each client's plan, by index, and what
// happens to each group's shared component. It is pure: it reads nothing
// but its arguments.
func planAll(names []string, was []*serving, inputs []clientInput, oldGroups groupView, withBase bool) ([]ClientPlan, map[groupKey]ComponentPlan) {
	newGroups := groupView{}
	for _, in := range inputs {
		newGroups.add(in.cfg)
	}
	groups := planGroups(oldGroups, newGroups)
	plans := make([]ClientPlan, len(names))
	for i, name := range names {
		plans[i] = planClient(name, was[i], inputs[i], withBase, groups)
	}
	return plans, groups
}

// Components shared across clients: clients whose circuit_breaker.group,
// bulkhead.group or rate_limit.group name the same group share one
// breaker, one pool of bulkhead slots or one limiter (config validation
// makes their settings equal). Which components a group can share is the
// component table's (a row with a config.GroupBlock). A group's component
// lives in the pipelines of its members; a reload plans it once
// (planGroups) and builds it once (groupTable, build.go), keeping it, and
// its state, while any member still uses it.

// groupKey names one shared component: its component (ComponentBreaker,
// ComponentBulkhead or ComponentRateLimit) and its group.
type groupKey struct{ block, name string }

// groupView holds, for each group's component switched on, the config of
// one member (members agree on the component's settings).
type groupView map[groupKey]config.ClientConfig

// add records the groups c is a member of.
func (v groupView) add(c config.ClientConfig) {
	for _, comp := range groupedComponents {
		if g := comp.state.group.Shares(c); g != "" {
			v[groupKey{comp.name, g}] = c
		}
	}
}

// planGroups decides what a reload does to each shared component the new
// config's members use: a group that served before is kept, retuned in
// place when its settings changed (the members' settings are equal, so
// they agree on the new ones), or replaced when its row says the change
// needs a fresh one; a new one starts fresh. A group no member uses any
// more is dropped with its last member.
func planGroups(old, new groupView) map[groupKey]ComponentPlan {
	out := make(map[groupKey]ComponentPlan, len(new))
	for k, nc := range new {
		cp := ComponentPlan{Component: k.block, Group: k.name, Change: Started, Reason: "group " + k.name + " starts"}
		if oc, ok := old[k]; ok {
			comp := componentOf(k.block)
			cp.Change, cp.Reason = Unchanged, ""
			if !comp.state.group.Equal(oc, nc) {
				cp.Change, cp.Reason = Retuned, "group "+k.name+"'s settings changed"
				if rep := comp.state.replace; rep != nil {
					if why := rep(clientInput{cfg: oc}, clientInput{cfg: nc}, nil); why != "" {
						cp.Change, cp.Reason = Replaced, "group "+k.name+": "+why
					}
				}
			}
		}
		out[k] = cp
	}
	return out
}

// componentOf returns the row of the named component.
func componentOf(name string) component {
	for _, c := range components {
		if c.name == name {
			return c
		}
	}
	panic("factory: no component " + name)
}

// planGrouped is planComponent for a stateful component that was or is
// shared through a group; isOn and wasOn say whether it is switched on.
func planGrouped(comp component, old, in clientInput, groups map[groupKey]ComponentPlan, wasOn, isOn bool) ComponentPlan {
	name, og, ng := comp.name, comp.groupOf(old.cfg), comp.groupOf(in.cfg)
	switch {
	case !isOn && !wasOn:
		return ComponentPlan{Component: name, Change: Off}
	case !isOn:
		_, _, key := comp.switched(old.cfg)
		return ComponentPlan{Component: name, Change: Stopped, Reason: key + " switched it off", Group: og}
	case ng == "":
		cp := ComponentPlan{Component: name, Change: Started, Reason: "leaves group " + og + " for a fresh one of its own"}
		if wasOn {
			cp.Change = Replaced
		}
		return cp
	case ng == og && wasOn:
		return groups[groupKey{name, ng}]
	}
	cp := ComponentPlan{Component: name, Change: Started, Reason: "joins group " + ng, Group: ng}
	if wasOn {
		cp.Change = Replaced
	}
	return cp
}

// clientInput is everything a client's pipeline is built from: its
// effective config, whether the config defines it, and the digests of the
// files it names (zero when only configs are planned).
type clientInput struct {
	cfg     config.ClientConfig
	defined bool
	// credDigest digests the resolved credential (its files read),
	// tlsDigest the TLS files' contents (see material).
	credDigest, tlsDigest [sha256.Size]byte
}

// serving is what a plan needs of the pipeline a client has now.
type serving struct {
	in    clientInput
	built bool // false for a pipeline that failed to build: never kept
}

// planClient is the one decision of what a reload does to client name:
// was is what serves it now (nil: nothing), in what the new config makes
// of it. withBase is true when Options.Base replaces the transport, which
// is then never built, kept or replaced.
func planClient(name string, was *serving, in clientInput, withBase bool, groups map[groupKey]ComponentPlan) ClientPlan {
	if was == nil {
		action := ActionAdded
		if !in.defined {
			action = ActionChanged // a name first asked for by Get
		}
		return ClientPlan{Name: name, Action: action, Components: fresh(in.cfg, withBase, groups)}
	}
	old := was.in
	if was.built && old.defined == in.defined && old.credDigest == in.credDigest &&
		old.tlsDigest == in.tlsDigest && old.cfg.Equal(in.cfg) {
		return ClientPlan{Name: name, Action: ActionUnchanged}
	}
	p := ClientPlan{Name: name, Action: ActionChanged, Keys: config.ChangedKeys(old.cfg, in.cfg)}
	switch {
	case !old.defined && in.defined:
		p.Action = ActionAdded
	case old.defined && !in.defined:
		p.Action = ActionRemoved
	}
	if !was.built {
		p.Components = fresh(in.cfg, withBase, groups)
		return p
	}
	for _, comp := range components {
		p.Components = append(p.Components, planComponent(comp, p.Keys, old, in, withBase, groups))
	}
	return p
}

// fresh plans a pipeline built from nothing. A member of a group gets the
// group's component (kept, retuned or started as groups plans it).
func fresh(c config.ClientConfig, withBase bool, groups map[groupKey]ComponentPlan) []ComponentPlan {
	out := make([]ComponentPlan, 0, len(components))
	for _, comp := range components {
		cp := ComponentPlan{Component: comp.name, Change: Started, Reason: "new pipeline"}
		if on, switchable, _ := comp.switched(c); switchable && !on {
			cp = ComponentPlan{Component: comp.name, Change: Off}
		} else if g := comp.groupOf(c); g != "" {
			cp = groups[groupKey{comp.name, g}]
			if cp.Change != Started {
				cp.Change, cp.Reason = Started, "joins group "+g
			}
		}
		if comp.state != nil && comp.state.base && withBase {
			cp = ComponentPlan{Component: comp.name, Change: Off, Reason: "Options.Base serves"}
		}
		out = append(out, cp)
	}
	return out
}

// planComponent decides the change of one component of a client whose
// input changed from old to in; keys are the keys that changed.
func planComponent(comp component, keys []config.KeyChange, old, in clientInput, withBase bool, groups map[groupKey]ComponentPlan) ComponentPlan {
	name := comp.name
	wasOn, switchable, switchKey := comp.switched(old.cfg)
	isOn, _, _ := comp.switched(in.cfg)
	if comp.groupOf(old.cfg) != "" || comp.groupOf(in.cfg) != "" {
		return planGrouped(comp, old, in, groups, wasOn, isOn)
	}
	if comp.state != nil && comp.state.base && withBase {
		return ComponentPlan{Component: name, Change: Off, Reason: "Options.Base serves"}
	}
	cp := ComponentPlan{Component: name, Change: Unchanged}
	var covered []string
	for _, k := range keys {
		if comp.covers(k.Key) {
			if covered == nil {
				cp.Change, cp.Reason = Retuned, k.Key+" changed"
			}
			covered = append(covered, k.Key)
		}
	}
	if cp.Change == Unchanged && comp.files != nil && comp.files(old) != comp.files(in) {
		cp.Change, cp.Reason = Retuned, comp.filesWhy
	}
	if cp.Change == Retuned && comp.state != nil && comp.state.replace != nil {
		if why := comp.state.replace(old, in, covered); why != "" {
			cp.Change, cp.Reason = Replaced, why
		}
	}
	if switchable {
		switch {
		case !wasOn && !isOn:
			cp = ComponentPlan{Component: name, Change: Off}
		case !wasOn:
			cp.Change, cp.Reason = Started, switchKey+" switched it on"
		case !isOn:
			cp.Change, cp.Reason = Stopped, switchKey+" switched it off"
		}
	}
	return cp
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

// serving returns what a plan needs of p.
func (p *pipeline) serving() *serving { return &serving{in: p.in, built: p.built} }

// covers reports whether key belongs to the component.
func (c component) covers(key string) bool {
	under := func(prefixes []string) bool {
		for _, p := range prefixes {
			if key == p || strings.HasPrefix(key, p+".") {
				return true
			}
		}
		return false
	}
	return under(c.keys) && !under(c.except)
}

// switched reports, for a component that exists only while switched on
// (breaker, bulkhead, rate limit), whether cfg switches it on, and the key
// that does; switchable is false for every other component.
func (c component) switched(cfg config.ClientConfig) (on, switchable bool, key string) {
	switch {
	case c.state == nil:
		return false, false, ""
	case c.state.group != nil:
		return c.state.group.On(cfg), true, c.state.group.SwitchKey(cfg)
	case c.state.on != nil:
		return c.state.on(cfg), true, c.state.switchKey
	}
	return false, false, ""
}

// groupOf returns the group cfg names for the component, on or off; ""
// for its own, or a component no group can share.
func (c component) groupOf(cfg config.ClientConfig) string {
	if c.state == nil || c.state.group == nil {
		return ""
	}
	return c.state.group.Group(cfg)
}

// groupedComponents are the rows a group can share, in pipeline order.
var groupedComponents = func() []component {
	var out []component
	for _, c := range components {
		if c.state != nil && c.state.group != nil {
			out = append(out, c)
		}
	}
	return out
}()
