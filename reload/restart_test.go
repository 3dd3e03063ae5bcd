package reload_test

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/reload"
)

// fakeNotifier stands in for fsnotify inside synctest bubbles, where real inotify I/O
// has no place. Tests fail it through its channels.
type fakeNotifier struct {
	events chan fsnotify.Event
	errs   chan error

	mu     sync.Mutex
	dirs   []string
	closed bool
}

func newFakeNotifier() *fakeNotifier {
	return &fakeNotifier{events: make(chan fsnotify.Event), errs: make(chan error)}
}

func (f *fakeNotifier) Add(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirs = append(f.dirs, dir)
	return nil
}

func (f *fakeNotifier) Remove(string) error           { return nil }
func (f *fakeNotifier) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeNotifier) Errors() <-chan error          { return f.errs }

func (f *fakeNotifier) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeNotifier) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *fakeNotifier) watched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.dirs)
}

// flakyFactory creates fake notifiers, failing the attempts listed in fail (1-based),
// and records when each attempt was made.
type flakyFactory struct {
	fail     map[int]bool
	attempts []time.Time
	made     []*fakeNotifier
}

func (f *flakyFactory) new() (reload.Notifier, error) {
	f.attempts = append(f.attempts, time.Now())
	if f.fail[len(f.attempts)] {
		return nil, errors.New("too many open files")
	}
	n := newFakeNotifier()
	f.made = append(f.made, n)
	return n, nil
}

func (f *flakyFactory) last() *fakeNotifier { return f.made[len(f.made)-1] }

func TestRestartBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "clients.yaml")
		write(t, path, "v1")
		var logs logcapture.Capture
		f := &flakyFactory{fail: map[int]bool{2: true, 3: true}}
		calls := make(chan time.Time, 10)
		w, err := reload.WatchWith([]string{path}, reload.Options{Logger: textLogger(&logs)},
			func() { calls <- time.Now() }, f.new, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		first := f.last()

		// An error: restarts at +100ms (fails), +300ms (fails), +700ms (works), then a
		// reload is due at once, reported after the debounce: +800ms. Nothing changed
		// on disk; the report is unconditional because events may have been lost.
		start := time.Now()
		first.errs <- fsnotify.ErrEventOverflow
		at := <-calls
		want := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond}
		if got := sinceAll(start, f.attempts[1:]); !slices.Equal(got, want) {
			t.Errorf("restart attempts at %v, want %v", got, want)
		}
		if got, want := at.Sub(start), 800*time.Millisecond; got != want {
			t.Errorf("reload reported at +%v, want +%v", got, want)
		}
		if !first.isClosed() {
			t.Error("the failed notifier was not closed")
		}
		if got, want := f.last().watched(), []string{dir}; !slices.Equal(got, want) {
			t.Errorf("restarted notifier watches %q, want %q", got, want)
		}
		if got := countLines(&logs, "level=ERROR", "event=watch.error", "overflow"); got != 1 {
			t.Errorf("got %d ERROR watch.error records naming the failure, want 1\n%s", got, logs.String())
		}
		if got := countLines(&logs, "level=ERROR", "event=watch.error", "too many open files"); got != 2 {
			t.Errorf("got %d ERROR watch.error records for failed restarts, want 2\n%s", got, logs.String())
		}
		if got := countLines(&logs, "event=watch.restarted"); got != 1 {
			t.Errorf("got %d watch.restarted records, want 1", got)
		}

		// Failing again soon after a restart continues the backoff (800ms) …
		start = time.Now()
		close(f.last().events) // a closed channel is a failure too
		at = <-calls
		if got, want := f.attempts[len(f.attempts)-1].Sub(start), 800*time.Millisecond; got != want {
			t.Errorf("restart soon after a restart at +%v, want +%v", got, want)
		}
		if got, want := at.Sub(start), 900*time.Millisecond; got != want {
			t.Errorf("reload reported at +%v, want +%v", got, want)
		}

		// … while a notifier that was healthy for 5s starts over at 100ms.
		time.Sleep(5 * time.Second)
		start = time.Now()
		f.last().errs <- errors.New("boom")
		<-calls
		if got, want := f.attempts[len(f.attempts)-1].Sub(start), 100*time.Millisecond; got != want {
			t.Errorf("restart after a healthy period at +%v, want +%v", got, want)
		}
	})
}

func TestRestartBackoffIsCappedAt5s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "clients.yaml")
		fail := map[int]bool{}
		for i := 2; i <= 9; i++ {
			fail[i] = true
		}
		f := &flakyFactory{fail: fail}
		calls := make(chan struct{}, 10)
		w, err := reload.WatchWith([]string{path}, reload.Options{Logger: textLogger(new(logcapture.Capture))},
			func() { calls <- struct{}{} }, f.new, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()

		start := time.Now()
		close(f.last().errs)
		<-calls
		var gaps []time.Duration
		prev := start
		for _, at := range f.attempts[1:] {
			gaps = append(gaps, at.Sub(prev))
			prev = at
		}
		ms := time.Millisecond
		want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms, 5000 * ms}
		if !slices.Equal(gaps, want) {
			t.Errorf("gaps between restart attempts %v, want %v", gaps, want)
		}
	})
}

func sinceAll(start time.Time, ts []time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Sub(start))
	}
	return out
}

// faultyNotifier is a real fsnotify watcher whose error channel the test controls.
type faultyNotifier struct {
	reload.Notifier
	errs chan error
}

func (f faultyNotifier) Errors() <-chan error { return f.errs }

func TestRestartOnRealFilesystemKeepsWatching(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	write(t, path, "v1")
	var logs logcapture.Capture
	var made atomic.Int32
	inject := make(chan error)
	newN := func() (reload.Notifier, error) {
		made.Add(1)
		n, err := reload.NewFSNotifier()
		if err != nil {
			return nil, err
		}
		return faultyNotifier{n, inject}, nil
	}
	_, r := startWatch(t, []string{path}, watchOpts{opts: reload.Options{Logger: textLogger(&logs)}, newNotifier: newN})

	write(t, path, "v2")
	r.waitFor(t, 0, "v2")

	inject <- errors.New("inotify read failed")
	if c := r.next(t); c.contents[0] != "v2" {
		t.Errorf("forced reload after restart read %q, want %q", c.contents[0], "v2")
	}
	if got := made.Load(); got != 2 {
		t.Errorf("notifier created %d times, want 2", got)
	}
	if got := countLines(&logs, "level=ERROR", "event=watch.error", "inotify read failed"); got != 1 {
		t.Errorf("got %d ERROR watch.error records, want 1\n%s", got, logs.String())
	}

	// The new fsnotify watcher watches the directory again.
	atomicfile.Write(t, path, "v3")
	r.waitFor(t, 0, "v3")
}
