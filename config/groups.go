package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// GroupBlock describes one block of ClientConfig whose component clients
// may share by naming the same group in its `group` key (circuit_breaker,
// bulkhead, rate_limit): when it is on, its group, and its settings. It is
// the one description of these three facts, which validation (members of
// a group must agree) and the factory's component table (what a reload
// plans, builds and reports for a group) both read; GroupBlocks lists
// them. The zero value describes no block: it is never on, names no group
// and has nil settings. Safe for concurrent use.
type GroupBlock struct {
	// Key is the block's key path, such as "circuit_breaker".
	Key string
	// Switch is the key that switches the component on, such as
	// "circuit_breaker.enabled".
	Switch string

	on       func(ClientConfig) bool
	group    func(ClientConfig) string
	settings func(ClientConfig) any
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

// Settings returns the block of c, comparable with ==.
func (b GroupBlock) Settings(c ClientConfig) any {
	if b.settings == nil {
		return nil
	}
	return b.settings(c)
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
		on:       func(c ClientConfig) bool { return c.CircuitBreaker.Enabled },
		group:    func(c ClientConfig) string { return c.CircuitBreaker.Group },
		settings: func(c ClientConfig) any { return c.CircuitBreaker }},
	{Key: "bulkhead", Switch: "bulkhead.max_concurrent",
		on:       func(c ClientConfig) bool { return c.Bulkhead.MaxConcurrent > 0 },
		group:    func(c ClientConfig) string { return c.Bulkhead.Group },
		settings: func(c ClientConfig) any { return c.Bulkhead }},
	{Key: "rate_limit", Switch: "rate_limit.requests_per_second",
		on:       func(c ClientConfig) bool { return c.RateLimit.RequestsPerSecond > 0 },
		group:    func(c ClientConfig) string { return c.RateLimit.Group },
		settings: func(c ClientConfig) any { return c.RateLimit }},
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
			if key, here, there, differ := firstDifference(gb.Settings(m.cfg), gb.Settings(ref.cfg)); differ {
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

// firstDifference compares two blocks of the same struct type field by
// field, in the file format's order, and returns the koanf key and both
// values of the first field that differs.
func firstDifference(a, b any) (key, va, vb string, differ bool) {
	x, y := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range x.NumField() {
		if reflect.DeepEqual(x.Field(i).Interface(), y.Field(i).Interface()) {
			continue
		}
		name, _, _ := strings.Cut(x.Type().Field(i).Tag.Get("koanf"), ",")
		return name, fmt.Sprint(x.Field(i).Interface()), fmt.Sprint(y.Field(i).Interface()), true
	}
	return "", "", "", false
}
