package factory_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
)

// soakYAML is valid edit n of the soak test: every client sends X-Edit: n
// and X-Client: its name; the breaker and bulkhead are retuned on every
// edit and the transport is replaced on every 7th. Retries are off, so a
// request that a reload broke would surface as an error.
func soakYAML(n, clients int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# edit %d\ndefaults:\n  timeout: 10s\n  retry: {max_retries: 0}\n", n)
	fmt.Fprintf(&b, "  transport: {idle_conn_timeout: %ds}\n", 60+n/7)
	fmt.Fprintf(&b, "  circuit_breaker: {enabled: true, failure_threshold: %d}\n", 5+n%3)
	fmt.Fprintf(&b, "  bulkhead: {max_concurrent: %d}\n", 64+n%5)
	b.WriteString("clients:\n")
	for c := range clients {
		fmt.Fprintf(&b, "  c%d:\n    headers: {X-Edit: \"%d\", X-Client: c%d}\n", c, n, c)
	}
	return b.String()
}

// soakBad are invalid edits, each rejected for a different reason; %d is
// the edit number, which keeps every file different from the last.
var soakBad = []string{
	"# edit %d\nclients:\n  c0:\n    retry: {max_retires: 1}\n",                       // unknown key
	"# edit %d\nclients:\n  c1:\n    retry: {max_retries: -1}\n",                      // out of range
	"# edit %d\nclients: [\n",                                                         // malformed YAML
	"# edit %d\n",                                                                     // empty file
	"# edit %d\nclients:\n  c2:\n    timeout: 1s\n    retry: {attempt_timeout: 2s}\n", // contradiction
	"# edit %d\nclients:\n  c3:\n    timeout: fast\n",                                 // wrong type
}

// TestReloadUnderLoadSoak rewrites the config file 200 times, valid and
// invalid edits mixed, while 32 goroutines send requests through 4 clients.
// No request may fail; each valid edit must be applied (the next generation,
// and its X-Edit seen by the server through every client) and each invalid
// one rejected with the previous config still serving.
func TestReloadUnderLoadSoak(t *testing.T) {
	const clients, workers = 4, 32
	edits := 200
	if testing.Short() {
		edits = 40
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("X-Client")+"="+r.Header.Get("X-Edit"))
	})
	events := newReloads()
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, soakYAML(0, clients))
	r, err := factory.Open(context.Background(), factory.Options{
		File: path, Debounce: 5 * time.Millisecond, Logger: discard(), OnReload: events.on,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	var firstErr atomic.Value
	for w := range workers {
		c := r.Get(fmt.Sprintf("c%d", w%clients))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(srv.URL)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				requests.Add(1)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	defer func() { // also on t.Fatal
		close(stop)
		wg.Wait()
	}()

	// seen checks that every client sends edit want.
	seen := func(i, want int) {
		t.Helper()
		for c := range clients {
			name := fmt.Sprintf("c%d", c)
			if got, exp := editOf(t, r.Get(name), srv.URL), fmt.Sprintf("%s=%d", name, want); got != exp {
				t.Fatalf("edit %d: server saw %q, want %q", i, got, exp)
			}
		}
	}
	start := time.Now()
	gen, last := uint64(1), 0
	var applied, rejected int
	for i := 1; i <= edits; i++ {
		valid := i%3 != 0
		content := soakYAML(i, clients)
		if !valid {
			content = fmt.Sprintf(soakBad[(i/3)%len(soakBad)], i)
		}
		atomicfile.Write(t, path, content)
		e := events.next(t)
		st := r.Status()
		if valid {
			gen++
			if e.Err != nil || e.Generation != gen || st.Generation != gen || st.LastError != nil {
				t.Fatalf("valid edit %d: got event %+v, status generation %d, error %v; want generation %d applied",
					i, e, st.Generation, st.LastError, gen)
			}
			last = i
			applied++
		} else {
			if e.Err == nil || e.Generation != gen || st.Generation != gen || st.LastError == nil {
				t.Fatalf("invalid edit %d: got event %+v, status generation %d, error %v; want rejected at generation %d",
					i, e, st.Generation, st.LastError, gen)
			}
			rejected++
		}
		seen(i, last)
	}
	took := time.Since(start)
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed during the reloads; first: %v", n, requests.Load(), firstErr.Load())
	}
	if requests.Load() < int64(edits) {
		t.Fatalf("only %d requests ran during %d edits: the load did not run", requests.Load(), edits)
	}
	t.Logf("%d edits (%d applied, %d rejected) in %v under %d requests from %d goroutines",
		edits, applied, rejected, took, requests.Load(), workers)
}
