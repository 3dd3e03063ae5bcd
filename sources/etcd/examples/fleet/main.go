// Command fleet shows a fleet on one config store: a real etcd (embedded,
// on 127.0.0.1), three OS processes of this program, each a registry on
// its own clients.yaml and env and on the one etcd key
// /switchboard/clients.yaml, and what ops see when they put to that key:
// each process applies a good put, rejects a bad one and keeps its last
// good config, and while etcd is down keeps serving and still applies an
// edit of its own file. Processes, not three registries in one process,
// because that is what a fleet is (nothing is shared but etcd) and they
// start in a few milliseconds.
//
//	go run ./examples/fleet          (in sources/etcd)
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/sources/etcd/internal/etcdtest"
	"github.com/switchboard-http/switchboard/sources/etcd/internal/fleetproc"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "member" {
		if err := member(os.Args[2:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "fleet member:", err)
			os.Exit(1)
		}
		return
	}
	self, err := os.Executable()
	if err == nil {
		err = run(os.Stdout, self)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

const key = "/switchboard/clients.yaml"

// shared is what ops keep in etcd for the whole fleet.
func shared(maxRetries int) string {
	return fmt.Sprintf("# shared by every process\nclients:\n  billing:\n    retry: {max_retries: %d}\n", maxRetries)
}

// local is one process's own clients.yaml.
func local(timeout string) string {
	return "clients:\n  billing:\n    timeout: " + timeout + "\n    retry: {max_retries: 1}   # etcd's value wins\n"
}

// limit bounds every wait of the demo.
const limit = 30 * time.Second

// run runs the demo, starting members as the program bin.
func run(w io.Writer, bin string) error {
	dir, err := os.MkdirTemp("", "fleet")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := etcdtest.Start(filepath.Join(dir, "etcd"))
	if err != nil {
		return err
	}
	defer srv.Stop()
	cli, err := srv.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	put := func(value string) error {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		_, err := etcdtest.Put(ctx, cli, key, value)
		return err
	}
	fmt.Fprintf(w, "etcd: serving on %s (embedded, data in a temporary directory)\n", srv.Endpoint())
	if err := put(shared(2)); err != nil {
		return err
	}
	fmt.Fprintf(w, "put %s: billing retry.max_retries 2\n\n", key)

	backend := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer backend.Close()
	var fleet []*fleetproc.Process
	defer func() {
		for _, p := range fleet {
			p.Stop()
		}
	}()
	for i, name := range []string{"a", "b", "c"} {
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, []byte(local("5s")), 0o600); err != nil {
			return err
		}
		env := append(environ(), fmt.Sprintf("SWITCHBOARD_CLIENTS__BILLING__RATE_LIMIT__REQUESTS_PER_SECOND=%d", 10*(i+1)))
		p, err := fleetproc.Start(name, bin, []string{"member", "-name", name, "-file", file, "-endpoint", srv.Endpoint(),
			"-key", key, "-read-timeout", "500ms", "-target", backend.URL}, env, limit)
		if err != nil {
			return err
		}
		fleet = append(fleet, p)
		r, pv := p.Ready, p.Ready.Provenance
		fmt.Fprintf(w, "%s: started, generation %d: billing max_retries %d (%s), timeout %s (%s), rate limit %v/s (%s)\n",
			name, r.Generation, r.MaxRetries, pv["retry.max_retries"], r.Timeout, pv["timeout"], r.RPS, pv["rate_limit.requests_per_second"])
	}

	fmt.Fprintf(w, "\nput %s: billing retry.max_retries 5\n", key)
	start := time.Now()
	if err := put(shared(5)); err != nil {
		return err
	}
	for _, p := range fleet {
		r, err := p.WaitFor(limit, func(r fleetproc.Report) bool { return r.Event == "applied" && r.MaxRetries == 5 })
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: applied generation %d, max_retries %d, %v after the put\n", p.Name, r.Generation, r.MaxRetries, r.At.Sub(start).Round(time.Millisecond))
	}

	fmt.Fprintf(w, "\nput %s: billing retry.max_retries -1 (a bad value)\n", key)
	if err := put(shared(-1)); err != nil {
		return err
	}
	for _, p := range fleet {
		r, err := p.WaitFor(limit, func(r fleetproc.Report) bool { return r.Event == "rejected" })
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: rejected it, keeps max_retries %d: %s\n", p.Name, r.MaxRetries, r.Error)
	}

	srv.Stop()
	fmt.Fprintf(w, "\netcd: stopped\n")
	a := fleet[0]
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(local("7s")), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(w, "a: its clients.yaml edited: billing timeout 7s\n")
	r, err := a.WaitFor(limit, func(r fleetproc.Report) bool { return r.Event == "applied" && r.Timeout == "7s" })
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "a: applied generation %d: timeout %s, max_retries %d (etcd's last good snapshot)\n", r.Generation, r.Timeout, r.MaxRetries)
	st, err := a.Status()
	if err != nil {
		return err
	}
	for _, s := range st.Sources {
		fmt.Fprintf(w, "a: status: source %s stale: %v (%s)\n", s.Name, s.Stale, s.LastError)
	}
	for _, p := range fleet[1:] {
		got, err := p.Call()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: still serving: GET through billing: %s\n", p.Name, got)
	}

	start = time.Now()
	if err := srv.Restart(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\netcd: restarted on the same port and data\n")
	if err := put(shared(6)); err != nil {
		return err
	}
	fmt.Fprintf(w, "put %s: billing retry.max_retries 6\n", key)
	for _, p := range fleet {
		r, err := p.WaitFor(limit, func(r fleetproc.Report) bool { return r.Event == "applied" && r.MaxRetries == 6 })
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: applied generation %d, max_retries %d, %v after etcd's restart, no process restarted\n",
			p.Name, r.Generation, r.MaxRetries, r.At.Sub(start).Round(time.Millisecond))
	}
	for _, p := range fleet {
		if err := p.Stop(); err != nil {
			return err
		}
	}
	fleet = nil
	fmt.Fprintln(w, "\ndone: three processes stopped, etcd stopped")
	return nil
}

// environ is this process's environment without SWITCHBOARD_ variables,
// so that each member gets only the ones the demo gives it.
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHBOARD_") {
			out = append(out, kv)
		}
	}
	return out
}
