package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Single-field validation reads each key's constraints from the key table:
// the enum, minimum, exclusiveMinimum, maximum and exclusiveMaximum tags
// that the JSON Schema and the reference show (a duration without a lower
// bound must be >= 0). Rules across keys stay in validate.go.

// rangeInCode lists the keys whose tagged range validate.go checks in its
// own words instead.
var rangeInCode = map[string]bool{
	"fault.abort.status":     true, // 0 stands for the default (503), in a file too
	"retry.retryable_status": true, // each item is a status code
}

// validateLeaves checks every key of c (every one keep accepts, when keep
// is not nil) against its tagged constraints. In a Config built in code
// (strict false) a zero number stands for the key's built-in default, so
// it passes whatever the range; in a loaded file it was written on purpose.
func validateLeaves(v *validator, c ClientConfig, strict bool, keep func(path string) bool) {
	cv := reflect.ValueOf(&c).Elem()
	for _, l := range keyTable {
		if rangeInCode[l.path] || keep != nil && !keep(l.path) {
			continue
		}
		fv := l.valueOf(cv)
		var x float64
		var shown string
		switch l.kind {
		case kindString:
			enum := enumOf(l.tag)
			if got := fv.String(); enum != nil && got != "" && !slices.Contains(enum, got) {
				enum = slices.DeleteFunc(enum, func(e string) bool { return e == "" })
				v.fail(l.path, "must be one of %s, got %s", strings.Join(enum, ", "), quoteShort(got))
			}
			continue
		case kindDuration:
			x, shown = float64(fv.Int()), time.Duration(fv.Int()).String()
		case kindInt:
			x, shown = float64(fv.Int()), strconv.FormatInt(fv.Int(), 10)
		case kindFloat:
			x, shown = fv.Float(), strconv.FormatFloat(fv.Float(), 'g', -1, 64)
		default:
			continue
		}
		if want, ok := inRange(l, x); !ok && (strict || x != 0) {
			v.fail(l.path, "must be %s, got %s", want, shown)
		}
	}
}

// inRange reports whether x is within the tagged range of l, and says
// what that range is: ">= 0", "> 0", "in [0, 100]", "in (0, 1]", "in [0, 1)".
func inRange(l *field, x float64) (want string, ok bool) {
	bound := func(name string) (string, float64, bool) {
		s, has := l.tag.Lookup(name)
		if !has {
			return "", 0, false
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			panic(fmt.Sprintf("config: bad %s tag %q on %s", name, s, l.path))
		}
		return s, n, true
	}
	ok = x == x // NaN is in no range
	lo, left := "", ""
	if s, n, has := bound("minimum"); has {
		lo, left, ok = ">= "+s, "["+s, ok && x >= n
	} else if s, n, has := bound("exclusiveMinimum"); has {
		lo, left, ok = "> "+s, "("+s, ok && x > n
	} else if l.kind == kindDuration {
		lo, left, ok = ">= 0", "[0", ok && x >= 0
	}
	if s, n, has := bound("maximum"); has {
		return "in " + left + ", " + s + "]", ok && x <= n
	} else if s, n, has := bound("exclusiveMaximum"); has {
		return "in " + left + ", " + s + ")", ok && x < n
	}
	return lo, ok
}
