// Command appconfig keeps switchboard's clients in the application's own
// config file, beside its other sections (Options.Section), and calls a
// backend by path alone (base_url), so that ops can repoint the client to
// another server by editing the file: the running process picks the edit
// up and moves to the new server without dropping a request. Its env has
// the variables Kubernetes sets for a Service named like the prefix
// (APP_PORT, APP_SERVICE_HOST), which switchboard leaves alone. It uses
// 127.0.0.1 only.
//
//	go run ./examples/appconfig
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-http/switchboard/factory"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "appconfig:", err)
		os.Exit(1)
	}
}

// appConfig is the application's whole config file; the clients live
// under http_clients.
const appConfig = `# config.yaml of the billing-gateway service
server:
  listen: :8080
db:
  dsn: postgres://db.internal/gateway
http_clients:
  defaults:
    logging: {events: warn}   # retries are metrics, not log lines
  clients:
    billing:
      base_url: %s/api/
      retry: {max_retries: 2, initial_backoff: 5ms, max_backoff: 20ms}
`

// The pod's env: the kubelet's service links for a Service named "app",
// and one override of the operator's.
var podEnv = []string{
	"APP_PORT=tcp://10.0.0.7:80",
	"APP_SERVICE_HOST=10.0.0.7",
	"APP_SERVICE_PORT=80",
	"APP_CLIENTS__BILLING__TIMEOUT=2s",
}

// deadline bounds each wait of the demo.
const deadline = 20 * time.Second

// run is the whole demo; main only picks the output and the exit code.
func run(out io.Writer) error {
	primary, failover := server("primary"), server("failover")
	defer primary.Close()
	defer failover.Close()

	dir, err := os.MkdirTemp("", "switchboard-appconfig-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.yaml")
	if err := replace(file, fmt.Sprintf(appConfig, primary.URL)); err != nil {
		return err
	}

	reloads := make(chan factory.ReloadEvent, 8)
	reg, err := factory.Open(context.Background(), factory.Options{
		File:      file,
		Section:   "http_clients",
		Require:   []string{"billing"}, // the code cannot run without it
		EnvPrefix: "APP_",
		Environ:   func() []string { return podEnv },
		Debounce:  20 * time.Millisecond,
		OnReload:  func(e factory.ReloadEvent) { reloads <- e },
	})
	if err != nil {
		return err
	}
	defer reg.Close()
	billing := reg.Get("billing")
	st := reg.Status().Clients[0]
	fmt.Fprintf(out, "client %s: base_url %s, timeout %s (env)\n", st.Name, redactPort(st.Config.BaseURL, primary.URL, failover.URL), st.Config.Timeout)

	// Callers keep calling by path while ops edit the file.
	var l load
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { l.run(billing, stop) })

	if err := l.waitFor("primary", deadline); err != nil {
		return stopped(stop, &wg, err)
	}
	fmt.Fprintln(out, "serving from: primary")
	if err := replace(file, fmt.Sprintf(appConfig, failover.URL)); err != nil {
		return stopped(stop, &wg, err)
	}
	fmt.Fprintln(out, "edited config.yaml: base_url -> the failover server")
	select {
	case e := <-reloads:
		if e.Err != nil {
			return stopped(stop, &wg, e.Err)
		}
		fmt.Fprintf(out, "reloaded: generation %d, changed %v\n", e.Generation, e.Changed)
	case <-time.After(deadline):
		return stopped(stop, &wg, errors.New("no reload"))
	}
	if err := l.waitFor("failover", deadline); err != nil {
		return stopped(stop, &wg, err)
	}
	fmt.Fprintln(out, "serving from: failover")
	close(stop)
	wg.Wait()
	fmt.Fprintf(out, "requests: %d, failed: %d\n", l.total(), l.failures())
	if l.failures() > 0 {
		return fmt.Errorf("%d requests failed: %v", l.failures(), l.firstErr())
	}
	return nil
}

// server answers every path under /api/ with its name.
func server(name string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, name)
	}))
}

// replace writes content to path as editors and kubectl do: a new file
// renamed over the old one, so a reader never sees half of it.
func replace(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// load is one caller calling GET v1/invoices/42 in a loop; it is safe for
// concurrent use.
type load struct {
	mu       sync.Mutex
	last     string
	n, fails int
	err      error
}

func (l *load) run(c *http.Client, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		body, err := call(c)
		l.mu.Lock()
		l.n++
		if err != nil {
			l.fails++
			if l.err == nil {
				l.err = err
			}
		} else {
			l.last = body
		}
		l.mu.Unlock()
	}
}

// call makes one request by path: base_url gives the server.
func call(c *http.Client) (string, error) {
	resp, err := c.Get("v1/invoices/42")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	return string(b), nil
}

// waitFor polls until a request was answered by the server called name.
func (l *load) waitFor(name string, limit time.Duration) error {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		l.mu.Lock()
		last := l.last
		l.mu.Unlock()
		if last == name {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("no answer from %s within %v", name, limit)
}

func (l *load) total() int      { l.mu.Lock(); defer l.mu.Unlock(); return l.n }
func (l *load) failures() int   { l.mu.Lock(); defer l.mu.Unlock(); return l.fails }
func (l *load) firstErr() error { l.mu.Lock(); defer l.mu.Unlock(); return l.err }

// stopped stops the load and returns err.
func stopped(stop chan struct{}, wg *sync.WaitGroup, err error) error {
	close(stop)
	wg.Wait()
	return err
}

// redactPort names the server a URL points at, for output that does not
// change from run to run.
func redactPort(u, primary, failover string) string {
	u = strings.Replace(u, primary, "<primary>", 1)
	return strings.Replace(u, failover, "<failover>", 1)
}
