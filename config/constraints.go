package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Single-field validation reads each key's constraints from the key table
// (the enum, minimum, exclusiveMinimum, maximum and exclusiveMaximum tags;
// a duration without a lower bound must be >= 0), the same tags the JSON
// Schema and the reference show. Rules across keys stay in validate.go.

// rangeInCode lists the keys whose tagged range validate.go checks with
// its own words instead.
var rangeInCode = map[string]bool{
	"fault.abort.status":     true, // 0 stands for the default (503), in a file too
	"retry.retryable_status": true, // each item is a status code
}

// validateLeaves checks every key of c (every one keep accepts, when keep
// is not nil) against its tagged constraints. In
// a Config built in code (strict false) a zero number stands for the key's
// built-in default, so it passes whatever the range; in a loaded file it
// was written on purpose.
func validateLeaves(v *validator, c ClientConfig, strict bool, keep func(path string) bool) {
	cv := reflect.ValueOf(&c).Elem()
	for _, l := range keyTable {
		if rangeInCode[l.path] || keep != nil && !keep(l.path) {
			continue
		}
		fv := l.valueOf(cv)
		switch l.kind {
		case kindString:
			if enum := enumOf(l.tag); enum != nil {
				if got := fv.String(); got != "" && !contains(enum, got) {
					v.fail(l.path, "must be one of %s, got %s", strings.Join(nonEmpty(enum), ", "), quoteShort(got))
				}
			}
		case kindDuration, kindInt, kindFloat:
			var x float64
			var shown string
			switch l.kind {
			case kindDuration:
				x, shown = float64(fv.Int()), time.Duration(fv.Int()).String()
			case kindInt:
				x, shown = float64(fv.Int()), strconv.FormatInt(fv.Int(), 10)
			default:
				x, shown = fv.Float(), strconv.FormatFloat(fv.Float(), 'g', -1, 64)
			}
			if x == 0 && !strict {
				continue
			}
			if want, ok := inRange(l, x); !ok {
				v.fail(l.path, "must be %s, got %s", want, shown)
			}
		}
	}
}

// inRange reports whether x is within the tagged range of l, and says
// what that range is: ">= 0", "> 0", "in [0, 100]", "in (0, 1]", "in [0, 1)".
func inRange(l *field, x float64) (string, bool) {
	bound := func(name string) (float64, string, bool) {
		s, ok := l.tag.Lookup(name)
		if !ok {
			return 0, "", false
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			panic(fmt.Sprintf("config: bad %s tag %q on %s", name, s, l.path))
		}
		return n, s, true
	}
	lo, los, hasLo := bound("minimum")
	xlo, xlos, hasXlo := bound("exclusiveMinimum")
	hi, his, hasHi := bound("maximum")
	xhi, xhis, hasXhi := bound("exclusiveMaximum")
	if !hasLo && !hasXlo && l.kind == kindDuration {
		lo, los, hasLo = 0, "0", true
	}
	var left, right, want string
	ok := !(x != x) // NaN is in no range
	switch {
	case hasLo:
		left, want, ok = "["+los, ">= "+los, ok && x >= lo
	case hasXlo:
		left, want, ok = "("+xlos, "> "+xlos, ok && x > xlo
	}
	switch {
	case hasHi:
		right, ok = his+"]", ok && x <= hi
	case hasXhi:
		right, ok = xhis+")", ok && x < xhi
	}
	if right != "" {
		if left == "" {
			return "<= " + strings.TrimRight(right, ")]"), ok
		}
		want = "in " + left + ", " + right
	}
	return want, ok
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// nonEmpty returns list without its "" entries (which stand for a default).
func nonEmpty(list []string) []string {
	out := make([]string, 0, len(list))
	for _, e := range list {
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}
