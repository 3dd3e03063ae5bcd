// Command kubernetes runs switchboard the way a pod does: the config file
// is a mounted ConfigMap, env vars from the pod spec override it, and the
// registry's status is served on an internal endpoint. Kubernetes mounts a
// ConfigMap as a directory of timestamped folders behind a "..data"
// symlink, and updates it by writing a new folder and swapping "..data" in
// one atomic rename; the demo builds that layout in a temporary directory
// and performs such a swap, which the running registry picks up. It uses
// 127.0.0.1 only.
//
//	go run ./examples/kubernetes
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/switchboard-http/switchboard/factory"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubernetes:", err)
		os.Exit(1)
	}
}

const firstVersion = `# ConfigMap "http-clients", key clients.yaml
defaults:
  timeout: 10s
clients:
  billing:
    retry: {max_retries: 2, initial_backoff: 5ms, max_backoff: 20ms}
`

const secondVersion = `# ConfigMap "http-clients" after kubectl apply: billing retries more
defaults:
  timeout: 10s
clients:
  billing:
    retry: {max_retries: 4, initial_backoff: 5ms, max_backoff: 20ms}
`

// The pod spec's env: a deadline for every client, set per environment.
var podEnv = []string{"SWITCHBOARD_DEFAULTS__TIMEOUT=3s", "PATH=/usr/bin"}

// run is the whole demo; main only picks the output and the exit code.
func run(out io.Writer) error {
	// A downstream that is down for its first six requests.
	var hits atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 6 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "invoice 42")
	}))
	defer backend.Close()

	mount, err := os.MkdirTemp("", "switchboard-configmap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mount)
	if err := mountConfigMap(mount, "..2026_11_29_10_00_00.123", firstVersion); err != nil {
		return err
	}
	fmt.Fprintln(out, "mounted:", listing(mount))

	reloads := make(chan factory.ReloadEvent, 8)
	reg, err := factory.Open(context.Background(), factory.Options{
		File:      filepath.Join(mount, "clients.yaml"),
		EnvPrefix: "SWITCHBOARD_",
		Environ:   func() []string { return podEnv }, // os.Environ in a real pod
		Logger:    slog.New(slog.DiscardHandler),
		OnReload:  func(e factory.ReloadEvent) { reloads <- e },
	})
	if err != nil {
		return err
	}
	defer reg.Close()

	// The status endpoint, on an internal listener in a real pod.
	status := httptest.NewServer(reg.Handler())
	defer status.Close()

	billing := reg.Get("billing")
	if err := call(out, billing, backend.URL, &hits); err != nil {
		return err
	}
	if err := printStatus(out, status.URL); err != nil {
		return err
	}

	// kubectl apply: the kubelet writes a new folder and swaps ..data.
	if err := swapConfigMap(mount, "..2026_11_29_10_05_00.456", secondVersion); err != nil {
		return err
	}
	fmt.Fprintln(out, "swapped ..data ->", "..2026_11_29_10_05_00.456")
	select {
	case e := <-reloads:
		if e.Err != nil {
			return fmt.Errorf("reload rejected: %w", e.Err)
		}
		fmt.Fprintf(out, "reloaded: generation %d, changed %v\n", e.Generation, e.Changed)
	case <-time.After(10 * time.Second):
		return errors.New("no reload within 10s of the ..data swap")
	}
	if err := call(out, billing, backend.URL, &hits); err != nil {
		return err
	}
	return printStatus(out, status.URL)
}

// mountConfigMap lays out dir as the kubelet mounts a ConfigMap:
//
//	..2026_11_29_10_00_00.123/clients.yaml
//	..data -> ..2026_11_29_10_00_00.123
//	clients.yaml -> ..data/clients.yaml
func mountConfigMap(dir, version, content string) error {
	if err := writeVersion(dir, version, content); err != nil {
		return err
	}
	if err := os.Symlink(version, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	return os.Symlink(filepath.Join("..data", "clients.yaml"), filepath.Join(dir, "clients.yaml"))
}

// swapConfigMap updates the mount as the kubelet does: a new version
// folder, a temporary symlink to it, renamed over ..data in one step, and
// the old folder removed.
func swapConfigMap(dir, version, content string) error {
	old, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		return err
	}
	if err := writeVersion(dir, version, content); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(dir, old))
}

func writeVersion(dir, version, content string) error {
	if err := os.Mkdir(filepath.Join(dir, version), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, version, "clients.yaml"), []byte(content), 0o644)
}

// listing describes the mount's entries, symlinks with their targets.
func listing(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	s := ""
	for _, e := range entries {
		if s != "" {
			s += ", "
		}
		s += e.Name()
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			s += " -> " + target
		}
	}
	return s
}

// call makes one request and prints its outcome.
func call(out io.Writer, c *http.Client, url string, hits *atomic.Int64) error {
	before := hits.Load()
	resp, err := c.Get(url + "/v1/invoices/42")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	fmt.Fprintf(out, "GET /v1/invoices/42: %s after %d attempts\n", resp.Status, hits.Load()-before)
	return nil
}

// printStatus fetches the status endpoint and prints what ops look at.
func printStatus(out io.Writer, url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var doc struct {
		Generation uint64 `json:"generation"`
		Clients    []struct {
			Name   string `json:"name"`
			Config struct {
				Timeout string `json:"timeout"`
				Retry   struct {
					MaxRetries int `json:"max_retries"`
				} `json:"retry"`
			} `json:"config"`
		} `json:"clients"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return fmt.Errorf("status endpoint: %w", err)
	}
	for _, c := range doc.Clients {
		fmt.Fprintf(out, "status: generation %d, client %s: timeout %s (env), retry.max_retries %d\n",
			doc.Generation, c.Name, c.Config.Timeout, c.Config.Retry.MaxRetries)
	}
	return nil
}
