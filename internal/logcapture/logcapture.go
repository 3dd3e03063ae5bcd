// Package logcapture captures slog records for tests: a logger that writes
// every record, Debug and up, as JSON into memory, and the records back as
// maps. It exists so that every package's tests read logs the same way.
package logcapture

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Capture holds what a logger from New wrote; it is also an io.Writer for
// tests that want a handler of their own (text, say) over a buffer they can
// read while the code under test writes. The zero value is an empty
// capture, ready for use. It is safe for concurrent use.
type Capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// New returns a logger that writes every record, Debug and up, as JSON to
// the returned Capture.
func New() (*slog.Logger, *Capture) {
	c := &Capture{}
	return slog.New(slog.NewJSONHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug})), c
}

// Write appends p; it is how the logger's handler writes.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// String returns everything logged so far.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// Records returns the records logged so far whose msg is msg ("" = all),
// each decoded into a map; a line that is not JSON fails t.
func (c *Capture) Records(t testing.TB, msg string) []map[string]any {
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
