package reload_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/reload"
)

func TestWatchCallbackPanicIsRecoveredAndWatchingGoesOn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	write(t, path, "v1")
	var logs logcapture.Capture
	calls := make(chan int, 10)
	n := 0
	w, err := reload.Watch([]string{path}, reload.Options{Debounce: 10 * time.Millisecond, Logger: textLogger(&logs)}, func() {
		n++ // fn is never called concurrently with itself
		calls <- n
		if n == 1 {
			panic("boom")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	wait := func(want int) {
		t.Helper()
		select {
		case got := <-calls:
			if got != want {
				t.Fatalf("callback: got call %d, want %d", got, want)
			}
		case <-time.After(deadline):
			t.Fatalf("no callback %d within %v", want, deadline)
		}
	}
	atomicfile.Write(t, path, "v2")
	wait(1)
	atomicfile.Write(t, path, "v3")
	wait(2) // still watching after the panic
	if c := countLines(&logs, "callback panicked", "boom", "event=watch.error"); c != 1 {
		t.Fatalf("got %d ERROR records of the panic, want 1; logs:\n%s", c, logs.String())
	}
}
