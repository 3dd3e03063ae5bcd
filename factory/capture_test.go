package factory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

// logCapture is a slog JSON handler's output, every level from Debug.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// newLogCapture returns a logger writing every record as JSON to the capture.
func newLogCapture() (*slog.Logger, *logCapture) {
	c := &logCapture{}
	return slog.New(slog.NewJSONHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug})), c
}

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// records returns the records whose msg is msg ("" = all).
func (c *logCapture) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(c.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if msg == "" || m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

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
