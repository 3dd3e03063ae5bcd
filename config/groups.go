package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// groupBlocks are the blocks whose component clients may share through a
// `group` key: circuit_breaker, bulkhead and rate_limit.
var groupBlocks = []struct {
	key   string
	group func(ClientConfig) string
}{
	{"circuit_breaker", func(c ClientConfig) string {
		if !c.CircuitBreaker.Enabled {
			return ""
		}
		return c.CircuitBreaker.Group
	}},
	{"bulkhead", func(c ClientConfig) string {
		if c.Bulkhead.MaxConcurrent <= 0 {
			return ""
		}
		return c.Bulkhead.Group
	}},
	{"rate_limit", func(c ClientConfig) string {
		if c.RateLimit.RequestsPerSecond <= 0 {
			return ""
		}
		return c.RateLimit.Group
	}},
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
			g := gb.group(m.cfg)
			if g == "" {
				continue
			}
			ref, seen := first[g]
			if !seen {
				first[g] = m
				continue
			}
			if key, here, there, differ := firstDifference(gb.key, m.cfg, ref.cfg); differ {
				errs = append(errs, &FieldError{
					Path: m.section + "." + gb.key + ".group",
					Msg: fmt.Sprintf("group %s needs the same %s settings in every client: %s is %s here and %s in %s",
						quoteShort(g), gb.key, key, here, there, ref.section),
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
			return rawSetting{key: l.path, kind: l.kind, value: treeValue(l.kind, v), secret: l.secret}.redacted().Text
		}
		return rel, show(l.valueOf(av)), show(l.valueOf(bv)), true
	}
	return "", "", "", false
}
