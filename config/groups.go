package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/switchboard-http/switchboard/middleware"
)

// GroupBlock describes one block of ClientConfig whose component clients
// may share by naming the same group in its `group` key (circuit_breaker,
// bulkhead, rate_limit): when it is on, its group, and whether two clients'
// settings of it are equal. It is the one description of these facts,
// which validation (members of a group must agree) and the factory's
// component table (what a reload plans, builds and reports for a group)
// both read; GroupBlocks lists them. The zero value describes no block: it
// is never on and names no group. Safe for concurrent use.
type GroupBlock struct {
	// Key is the block's key path, such as "circuit_breaker".
	Key string
	// Switch is the key that switches the component on, such as
	// "circuit_breaker.enabled".
	Switch string

	on    func(ClientConfig) bool
	group func(ClientConfig) string
	// switchOf, when set, names the key that switches the component on
	// in a config, where more than one can; nil: Switch.
	switchOf func(ClientConfig) string
}

// SwitchKey returns the key that switches the block's component on (or
// would) in c: Switch, unless another key of the block does it there
// (bulkhead.mode adaptive switches a bulkhead on whatever
// max_concurrent says).
func (b GroupBlock) SwitchKey(c ClientConfig) string {
	if b.switchOf != nil {
		return b.switchOf(c)
	}
	return b.Switch
}

// On reports whether c switches the block's component on; a client with
// it off shares nothing, whatever group it names.
func (b GroupBlock) On(c ClientConfig) bool { return b.on != nil && b.on(c) }

// Group returns the group c names in the block, on or off; "" is the
// client's own component.
func (b GroupBlock) Group(c ClientConfig) string {
	if b.group == nil {
		return ""
	}
	return b.group(c)
}

// Equal reports whether x and y have the same value for every key of the
// block (its `group` key included), as ClientConfig.Equal compares them.
func (b GroupBlock) Equal(x, y ClientConfig) bool {
	_, _, _, differ := firstDifference(b.Key, x, y)
	return !differ
}

// Shares returns the group whose component c uses: Group(c) while the
// component is on, "" otherwise.
func (b GroupBlock) Shares(c ClientConfig) string {
	if !b.On(c) {
		return ""
	}
	return b.Group(c)
}

// groupBlocks are the blocks clients may share, in pipeline order. A new
// shareable block is one more GroupBlock here.
var groupBlocks = []GroupBlock{
	{Key: "circuit_breaker", Switch: "circuit_breaker.enabled",
		on:    func(c ClientConfig) bool { return c.CircuitBreaker.Enabled },
		group: func(c ClientConfig) string { return c.CircuitBreaker.Group }},
	{Key: "bulkhead", Switch: "bulkhead.max_concurrent",
		on: func(c ClientConfig) bool {
			return c.Bulkhead.MaxConcurrent > 0 || c.Bulkhead.Mode == middleware.BulkheadAdaptive
		},
		group: func(c ClientConfig) string { return c.Bulkhead.Group },
		switchOf: func(c ClientConfig) string {
			if c.Bulkhead.Mode == middleware.BulkheadAdaptive {
				return "bulkhead.mode"
			}
			return "bulkhead.max_concurrent"
		}},
	{Key: "rate_limit", Switch: "rate_limit.requests_per_second",
		on:    func(c ClientConfig) bool { return c.RateLimit.RequestsPerSecond > 0 },
		group: func(c ClientConfig) string { return c.RateLimit.Group }},
}

// GroupBlocks returns every block clients may share, in pipeline order.
func GroupBlocks() []GroupBlock { return slices.Clone(groupBlocks) }

// GroupBlockOf returns the shareable block at key path key, such as
// "bulkhead", and false when clients cannot share that block.
func GroupBlockOf(key string) (GroupBlock, bool) {
	for _, b := range groupBlocks {
		if b.Key == key {
			return b, true
		}
	}
	return GroupBlock{}, false
}

// validateGroups checks that the clients naming one group in a block, with
// the block's component switched on (a member with it off shares nothing),
// have equal settings for that block: they share one component, which can only
// have one set of settings. The client that differs from the first member
// (by name; `defaults` last, standing for every client it defines) gets an
// error on its group key naming the other client and the first key that
// differs.
func validateGroups(c Config) []*FieldError {
	type member struct {
		section string
		cfg     ClientConfig
	}
	members := make([]member, 0, len(c.Clients)+1)
	for _, name := range slices.Sorted(maps.Keys(c.Clients)) {
		members = append(members, member{"clients." + name, c.Clients[name]})
	}
	members = append(members, member{"defaults", c.Defaults})

	var errs []*FieldError
	for _, gb := range groupBlocks {
		first := map[string]member{}
		for _, m := range members {
			g := gb.Shares(m.cfg)
			if g == "" {
				continue
			}
			ref, seen := first[g]
			if !seen {
				first[g] = m
				continue
			}
			if key, here, there, differ := firstDifference(gb.Key, m.cfg, ref.cfg); differ {
				errs = append(errs, &FieldError{
					Path: m.section + "." + gb.Key + ".group",
					Msg: fmt.Sprintf("group %s needs the same %s settings in every client: %s is %s here and %s in %s",
						quoteShort(g), gb.Key, key, here, there, ref.section),
				})
			}
		}
	}
	return errs
}

// firstDifference compares the keys of block in a and b, in the file
// format's order, and returns the first that differs (relative to the
// block) with both values as Settings shows them.
func firstDifference(block string, a, b ClientConfig) (key, va, vb string, differ bool) {
	av, bv := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for _, l := range keyTable {
		rel, in := strings.CutPrefix(l.path, block+".")
		if !in || leafEqual(l.kind, l.valueOf(av), l.valueOf(bv)) {
			continue
		}
		show := func(v reflect.Value) string {
			return rawSetting{key: l.path, kind: l.kind, value: treeValue(l.kind, v), redact: l.redact}.redacted().Text
		}
		return rel, show(l.valueOf(av)), show(l.valueOf(bv)), true
	}
	return "", "", "", false
}
