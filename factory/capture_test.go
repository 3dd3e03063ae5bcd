package factory_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"

	"github.com/switchboard-http/switchboard/middleware"
)

// eventLog is an Observer that keeps every event.
type eventLog struct {
	mu     sync.Mutex
	events []middleware.Event
}

func (l *eventLog) OnEvent(_ context.Context, e middleware.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// names returns how many events of each name arrived.
func (l *eventLog) names() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, e := range l.events {
		out[e.Name]++
	}
	return out
}

// String renders every event with every field, the error's text included.
func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.events {
		fmt.Fprintf(&b, "%+v", e)
		if e.Err != nil {
			fmt.Fprintf(&b, " err=%s", e.Err.Error())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// discardStdLog is a *log.Logger that writes nowhere.
func discardStdLog() *log.Logger { return log.New(io.Discard, "", 0) }
