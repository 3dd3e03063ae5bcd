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
	block func(ClientConfig) any
	group func(ClientConfig) string
}{
	{"circuit_breaker", func(c ClientConfig) any { return c.CircuitBreaker }, func(c ClientConfig) string {
		if !c.CircuitBreaker.Enabled {
			return ""
		}
		return c.CircuitBreaker.Group
	}},
	{"bulkhead", func(c ClientConfig) any { return c.Bulkhead }, func(c ClientConfig) string {
		if c.Bulkhead.MaxConcurrent <= 0 {
			return ""
		}
		return c.Bulkhead.Group
	}},
	{"rate_limit", func(c ClientConfig) any { return c.RateLimit }, func(c ClientConfig) string {
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
			if key, here, there, differ := firstDifference(gb.block(m.cfg), gb.block(ref.cfg)); differ {
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
