// Package eventrec records middleware events for tests: one Observer that
// keeps every event it is told of, and the ways tests read them back
// (by name, as a list of names, as counts, as text). It exists so that
// every package's tests record events the same way instead of each keeping
// its own copy of the same dozen lines.
package eventrec

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/switchboard-http/switchboard/middleware"
)

// Recorder is a middleware.Observer that keeps every event, in the order
// OnEvent was called. The zero value is an empty recorder, ready for use.
// It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []middleware.Event
}

// OnEvent keeps e.
func (r *Recorder) OnEvent(_ context.Context, e middleware.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Events returns a copy of every event kept so far.
func (r *Recorder) Events() []middleware.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]middleware.Event(nil), r.events...)
}

// Named returns the events called name, in order; nil when there are none.
func (r *Recorder) Named(name string) []middleware.Event {
	var out []middleware.Event
	for _, e := range r.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// Names returns the name of every event, in order.
func (r *Recorder) Names() []string {
	var out []string
	for _, e := range r.Events() {
		out = append(out, e.Name)
	}
	return out
}

// Counts returns how many events of each name arrived.
func (r *Recorder) Counts() map[string]int {
	out := map[string]int{}
	for _, e := range r.Events() {
		out[e.Name]++
	}
	return out
}

// String renders every event with every field, one a line, the error's
// text included: for a test's failure message.
func (r *Recorder) String() string {
	var b strings.Builder
	for _, e := range r.Events() {
		fmt.Fprintf(&b, "%+v", e)
		if e.Err != nil {
			fmt.Fprintf(&b, " err=%s", e.Err.Error())
		}
		b.WriteByte('\n')
	}
	return b.String()
}
