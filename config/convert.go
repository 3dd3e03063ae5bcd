package config

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// fromYAML converts v, a value decoded from the YAML file, into the canonical
// type of leaf f (see toTree). raw returns the literal text of a scalar in the
// file, used where a string is wanted and YAML typed the scalar otherwise
// (min_version: 1.2, a numeric header value). On failure it returns a message
// for a FieldError; it never quotes the value of a secret key.
func fromYAML(f *field, v any, raw func(suffix string) (string, bool)) (any, string) {
	if v == nil {
		return nil, "has no value; set one or remove the key"
	}
	switch f.kind {
	case kindDuration:
		switch x := v.(type) {
		case string:
			d, err := time.ParseDuration(x)
			if err != nil {
				return nil, mustBe(f.kind, describe(v, f.holdsSecret))
			}
			return d, ""
		case int:
			if x == 0 { // 0 is unambiguous in every unit
				return time.Duration(0), ""
			}
		}
		return nil, mustBe(f.kind, describe(v, f.holdsSecret))
	case kindInt:
		n, ok := yamlInt(v)
		if !ok {
			return nil, mustBe(f.kind, describe(v, f.holdsSecret))
		}
		return n, ""
	case kindFloat:
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) {
				break
			}
			return x, ""
		default:
			if n, ok := yamlInt(v); ok {
				return float64(n), ""
			}
		}
		return nil, mustBe(f.kind, describe(v, f.holdsSecret))
	case kindBool:
		if b, ok := v.(bool); ok {
			return b, ""
		}
		return nil, mustBe(f.kind, describe(v, f.holdsSecret))
	case kindString:
		s, ok := yamlString(v, func() (string, bool) { return raw("") })
		if !ok {
			return nil, mustBe(f.kind, describe(v, f.holdsSecret))
		}
		return s, ""
	case kindIntList:
		l, ok := v.([]any)
		if !ok {
			return nil, mustBe(f.kind, describe(v, f.holdsSecret))
		}
		out := make([]int, len(l))
		for i, e := range l {
			n, ok := yamlInt(e)
			if !ok {
				return nil, itemMustBe(i, kindInt, describe(e, f.holdsSecret))
			}
			out[i] = n
		}
		return out, ""
	case kindStringList:
		l, ok := v.([]any)
		if !ok {
			return nil, mustBe(f.kind, describe(v, f.holdsSecret))
		}
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := yamlString(e, func() (string, bool) { return raw(fmt.Sprintf("[%d]", i)) })
			if !ok {
				return nil, itemMustBe(i, kindString, describe(e, f.holdsSecret))
			}
			out[i] = s
		}
		return out, ""
	}
	return nil, "is not a single value"
}

// yamlInt converts a YAML-decoded integer.
func yamlInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		if x >= math.MinInt && x <= math.MaxInt {
			return int(x), true
		}
	case uint64:
		if x <= math.MaxInt {
			return int(x), true
		}
	}
	return 0, false
}

// yamlString returns v as a string: strings as they are, other scalars
// (numbers, booleans, timestamps) as written in the file.
func yamlString(v any, raw func() (string, bool)) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case nil, []any, map[string]any, map[any]any:
		return "", false
	}
	if s, ok := raw(); ok {
		return s, true
	}
	return fmt.Sprint(v), true
}

// describe renders a value for an error message: strings quoted and cut
// short, lists and maps by kind. Secret values are never rendered.
func describe(v any, secret bool) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a map"
	case string:
		if secret {
			return "<redacted>"
		}
		return quoteShort(x)
	}
	if secret {
		return "<redacted>"
	}
	return fmt.Sprint(v)
}

// quoteShort quotes s, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// fromText converts s, the text of an env variable or flag, into the
// canonical type of leaf f. Lists are comma-separated; an empty (or blank)
// text is the empty list. On failure it returns a message for a FieldError.
func fromText(f *field, s string) (any, string) {
	switch f.kind {
	case kindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, mustBe(f.kind, quoteText(s, f.holdsSecret))
		}
		return d, ""
	case kindInt:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, mustBe(f.kind, quoteText(s, f.holdsSecret))
		}
		return n, ""
	case kindFloat:
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(x) {
			return nil, mustBe(f.kind, quoteText(s, f.holdsSecret))
		}
		return x, ""
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, mustBe(f.kind, quoteText(s, f.holdsSecret))
		}
		return b, ""
	case kindString:
		return s, ""
	case kindIntList:
		items := splitList(s)
		out := make([]int, len(items))
		for i, it := range items {
			n, err := strconv.Atoi(it)
			if err != nil {
				return nil, itemMustBe(i, kindInt, quoteText(it, f.holdsSecret))
			}
			out[i] = n
		}
		return out, ""
	case kindStringList:
		return splitList(s), ""
	case kindStringMap:
		return nil, "is a map: set one entry per key, e.g. headers.X-Name"
	}
	return nil, "is a section, not a single key"
}

// quoteText quotes an env or flag text for an error, unless it is secret.
func quoteText(s string, secret bool) string {
	if secret {
		return "<redacted>"
	}
	return quoteShort(s)
}

// splitList splits a comma-separated list, trimming blanks around items; a
// blank s is the empty list.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// canonicalHeader returns the canonical form of a header name.
func canonicalHeader(name string) string { return http.CanonicalHeaderKey(name) }
