package reload_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/reload"
)

func TestCloseIsIdempotentAndSetFilesAfterCloseFails(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "clients.yaml")
	w, err := reload.Watch([]string{path}, reload.Options{}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.SetFiles([]string{path}); !errors.Is(err, reload.ErrClosed) {
		t.Errorf("SetFiles after Close: got %v, want %v", err, reload.ErrClosed)
	}
}

func TestCloseDuringPendingDebounceCallsNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "clients.yaml")
	write(t, path, "v1")
	var closed atomic.Bool
	w, err := reload.Watch([]string{path}, reload.Options{Debounce: time.Second}, func() {
		if closed.Load() {
			t.Error("callback ran after Close returned")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "v2") // a reload becomes due a second from now …
	if err := w.Close(); err != nil {
		t.Fatal(err)
	} // … but Close comes first and drops it; goleak checks that nothing is left.
	closed.Store(true)
}

func TestCloseConcurrentWithEvents(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "clients.yaml")
	write(t, path, "v0")
	var closed atomic.Bool
	var count atomic.Int32
	calls := make(chan struct{}, 1000)
	w, err := reload.Watch([]string{path}, reload.Options{Debounce: time.Millisecond}, func() {
		if closed.Load() {
			t.Error("callback ran after Close returned")
		}
		count.Add(1)
		calls <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}

	// Each write waits for its callback, so events and callbacks keep interleaving
	// while Close runs.
	stop := make(chan struct{})
	var writers sync.WaitGroup
	writers.Go(func() {
		for i := 0; ; i++ {
			// Not write/atomicfile.Write: t.Fatal is for the test's own goroutine.
			target := path
			if i%2 == 1 {
				target = filepath.Join(dir, "tmp") // then renamed over path
			}
			if err := os.WriteFile(target, []byte(strconv.Itoa(i)), 0o644); err != nil {
				t.Error(err)
				return
			}
			if target != path {
				if err := os.Rename(target, path); err != nil {
					t.Error(err)
					return
				}
			}
			select {
			case <-calls:
			case <-stop:
				return
			}
		}
	})
	poll(t, "a few callbacks", func() bool { return count.Load() >= 3 })

	var closers sync.WaitGroup
	for range 3 {
		closers.Go(func() {
			if err := w.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			closed.Store(true)
		})
	}
	closers.Wait()
	if err := w.SetFiles([]string{path}); !errors.Is(err, reload.ErrClosed) {
		t.Errorf("SetFiles after Close: got %v, want %v", err, reload.ErrClosed)
	}
	close(stop)
	writers.Wait()
}
