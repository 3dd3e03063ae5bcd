package reload_test

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/reload"
)

// deadline bounds every wait for the watcher; reaching it fails the test.
const deadline = 5 * time.Second

// missing is the content a call records for a file it could not read.
const missing = "<missing>"

// call is one run of the callback: when it started and what it read from each file.
type call struct {
	at       time.Time
	contents []string // in the order of recorder.files
}

// recorder is a callback that reads the watched files, as a real consumer would, and
// reports each run, and each check, on a channel.
type recorder struct {
	files  []string
	calls  chan call
	checks chan bool
}

func (r *recorder) fn() {
	c := call{at: time.Now()}
	for _, f := range r.files {
		b, err := os.ReadFile(f)
		if err != nil {
			c.contents = append(c.contents, missing)
			continue
		}
		c.contents = append(c.contents, string(b))
	}
	r.calls <- c
}

// watchOpts are the knobs of startWatch.
type watchOpts struct {
	opts        reload.Options
	newNotifier func() (reload.Notifier, error)
}

// startWatch watches files with a recorder as the callback and closes the watcher at
// the end of the test.
func startWatch(t *testing.T, files []string, wo watchOpts) (*reload.Watcher, *recorder) {
	t.Helper()
	r := &recorder{files: files, calls: make(chan call, 1000), checks: make(chan bool, 1000)}
	if wo.opts.Logger == nil {
		wo.opts.Logger = slog.New(slog.NewTextHandler(t.Output(), nil)) // shown with -v or on failure
	}
	w, err := reload.WatchWith(files, wo.opts, r.fn, wo.newNotifier, func(changed bool) { r.checks <- changed })
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w, r
}

// next waits for the next call.
func (r *recorder) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-r.calls:
		return c
	case <-time.After(deadline):
		t.Fatalf("no callback within %v", deadline)
		return call{}
	}
}

// waitFor waits for a call where file i has content want, and returns it with the
// number of calls seen, that one included.
func (r *recorder) waitFor(t *testing.T, i int, want string) (call, int) {
	t.Helper()
	timeout := time.After(deadline)
	var seen []string
	for {
		select {
		case c := <-r.calls:
			seen = append(seen, c.contents[i])
			if c.contents[i] == want {
				return c, len(seen)
			}
		case <-timeout:
			t.Fatalf("no callback seeing %q within %v; calls saw %q", want, deadline, seen)
			return call{}, 0
		}
	}
}

// nextCheck waits for the next check and returns whether it called the callback.
func (r *recorder) nextCheck(t *testing.T) bool {
	t.Helper()
	select {
	case changed := <-r.checks:
		return changed
	case <-time.After(deadline):
		t.Fatalf("no check within %v", deadline)
		return false
	}
}

// noCalls fails if a call has been recorded and not consumed.
func (r *recorder) noCalls(t *testing.T) {
	t.Helper()
	select {
	case c := <-r.calls:
		t.Fatalf("unexpected callback reading %q", c.contents)
	default:
	}
}

// poll waits until cond holds; for letting the watcher settle, never for a verdict
// on timing.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(timeout) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// textLogger returns a logger that writes every record, Debug and up, as
// text to c, which tests read while the watcher writes.
func textLogger(c *logcapture.Capture) *slog.Logger {
	return slog.New(slog.NewTextHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// countLines returns how many records in c contain every one of parts.
func countLines(c *logcapture.Capture, parts ...string) int {
	n := 0
	for line := range strings.Lines(c.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}
