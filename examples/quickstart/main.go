// Command quickstart is switchboard's first demo: a flaky in-process server
// (503 to the first two attempts of every call, then 200),
// a clients.yaml in a temporary directory, a registry that retries through
// the flakiness, and a live edit of the file (as ops would make it) that the
// running process picks up, followed by a bad edit that is rejected while the
// last good config keeps serving. After every call it prints what the server
// saw (the status of each attempt) and what the client got. It uses
// 127.0.0.1 only.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

const firstConfig = `# clients.yaml, as ops would write it
defaults:
  timeout: 5s
  headers: {User-Agent: quickstart/1.0}
clients:
  billing:
    retry:
      max_retries: 3
      initial_backoff: 20ms
      max_backoff: 200ms
`

const tunedConfig = `# ops turn retries off for billing
defaults:
  timeout: 5s
  headers: {User-Agent: quickstart/1.0}
clients:
  billing:
    retry:
      max_retries: 0
`

const badConfig = `# a typo and a bare number for a duration
clients:
  billing:
    retry:
      max_retires: 2
      initial_backoff: 500
`

// run is the whole demo; main only picks the output and the exit code.
func run(out io.Writer) error {
	// A downstream that is busy for the first two attempts of every call:
	// it answers 503 twice, then 200. It tells calls apart by the X-Call
	// header the demo sets on each one, and records the status of every
	// attempt it answered, so each step can print what the server saw.
	srv := newFlakyServer()
	defer srv.Close()

	dir, err := os.MkdirTemp("", "switchboard-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "clients.yaml")
	if err := save(path, firstConfig); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s:\n%s\n", path, firstConfig)

	reloads := make(chan factory.ReloadEvent, 4)
	clients, err := factory.Open(context.Background(), factory.Options{
		File:      path,
		EnvPrefix: "QUICKSTART_",
		Logger:    slog.New(slog.DiscardHandler),
		Observer: middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
			if e.Name == middleware.EventRetryAttempt {
				fmt.Fprintf(out, "   … %s: got %d; attempt %d in %v\n", e.Client, e.Status, e.Attempt, e.Delay.Round(time.Millisecond))
			}
		}),
		OnReload: func(e factory.ReloadEvent) { reloads <- e },
	})
	if err != nil {
		return err
	}
	defer clients.Close()
	billing := clients.Get("billing") // kept for the life of the process

	fmt.Fprintln(out, "1. GET through billing (max_retries 3): the 503s are retried")
	if err := call(out, billing, srv, "call-1"); err != nil {
		return err
	}

	fmt.Fprintln(out, "\n2. ops edit clients.yaml: max_retries 0")
	if err := save(path, tunedConfig); err != nil {
		return err
	}
	e, err := wait(reloads)
	if err != nil {
		return err
	}
	if e.Err != nil {
		return fmt.Errorf("the tuned config was rejected: %w", e.Err)
	}
	fmt.Fprintf(out, "   reloaded: generation %d, changed %v (same *http.Client: %v)\n", e.Generation, e.Changed, clients.Get("billing") == billing)
	fmt.Fprintln(out, "   a new call, now without retries:")
	if err := call(out, billing, srv, "call-2"); err != nil {
		return err
	}

	fmt.Fprintln(out, "\n3. a bad edit is rejected; the last good config keeps serving")
	if err := save(path, badConfig); err != nil {
		return err
	}
	if e, err = wait(reloads); err != nil {
		return err
	}
	if e.Err == nil {
		return errors.New("the bad config was applied")
	}
	fmt.Fprintf(out, "   rejected, generation %d keeps serving:\n%v\n", e.Generation, indent(e.Err.Error()))
	fmt.Fprintln(out, "   a new call, still on generation 2 (max_retries 0):")
	return call(out, billing, srv, "call-3")
}

// flakyServer is the demo's downstream: per call (the X-Call header), the
// first two attempts get 503 and the later ones 200. It is safe for
// concurrent use.
type flakyServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]int // call → status of each attempt answered
}

func newFlakyServer() *flakyServer {
	s := &flakyServer{seen: map[string][]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Call")
		s.mu.Lock()
		code := http.StatusOK
		if len(s.seen[id]) < 2 {
			code = http.StatusServiceUnavailable
		}
		s.seen[id] = append(s.seen[id], code)
		s.mu.Unlock()
		if code != http.StatusOK {
			http.Error(w, "busy", code)
			return
		}
		fmt.Fprintln(w, "invoice 42: paid")
	}))
	return s
}

// attempts returns the status of each attempt of call the server answered.
func (s *flakyServer) attempts(call string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen[call])
}

// call makes one logical call named id through c, then prints what the
// server saw (one status per attempt) and what the client got.
func call(out io.Writer, c *http.Client, srv *flakyServer, id string) error {
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/invoices/42", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Call", id)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	seen := srv.attempts(id)
	codes := make([]string, len(seen))
	for i, code := range seen {
		codes[i] = strconv.Itoa(code)
	}
	n := "attempts"
	if len(seen) == 1 {
		n = "attempt"
	}
	fmt.Fprintf(out, "   server saw %d %s of %s: %s\n", len(seen), n, id, strings.Join(codes, ", "))
	fmt.Fprintf(out, "   client got %s %q\n", resp.Status, strings.TrimSpace(string(body)))
	return nil
}

// save writes path the way careful editors and ConfigMaps do: a temporary
// file renamed over the old one, so no reader sees half a file.
func save(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func wait(reloads <-chan factory.ReloadEvent) (factory.ReloadEvent, error) {
	select {
	case e := <-reloads:
		return e, nil
	case <-time.After(10 * time.Second):
		return factory.ReloadEvent{}, errors.New("no reload within 10s")
	}
}

func indent(s string) string {
	out := "     "
	for _, r := range s {
		out += string(r)
		if r == '\n' {
			out += "     "
		}
	}
	return out
}
