package scenario

import (
	"context"
	"slices"
)

// interleaved runs every stack named in names once per round, rounds
// times (at least once), in an order rotated by one stack each round, so
// that no stack always runs first on a machine whose load drifts: the
// rounds that run every stack once each, side by side, that the capacity
// and coalescing scenarios report medians of. Each run gets a fresh
// LimitStack, closed after run returns; run is given the round (from 0)
// and the stack's index in names. A stack NewLimitStack skips (a key this
// build does not know) is reported once to skip and not run again. It
// stops at the first error of NewLimitStack, or when ctx ends.
func interleaved(ctx context.Context, rounds int, names []string, skip func(i int, why string), run func(r, i int, s LimitStack)) error {
	skipped := make([]bool, len(names))
	for r := range max(rounds, 1) {
		for k := range names {
			i := (k + r) % len(names)
			if skipped[i] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			s, why, err := NewLimitStack(names[i])
			if err != nil {
				return err
			}
			if why != "" {
				skipped[i] = true
				skip(i, why)
				continue
			}
			run(r, i, s)
			s.Close()
		}
	}
	return nil
}

// selected returns the names of all that only lists, in all's order; a
// nil only selects every one.
func selected(all, only []string) []string {
	if only == nil {
		return all
	}
	return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return !slices.Contains(only, n) })
}
