package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	etcdsource "github.com/switchboard-http/switchboard/sources/etcd"
	"github.com/switchboard-http/switchboard/sources/etcd/internal/fleetproc"
)

// member is one service of the fleet: a registry on its own file, its own
// env (SWITCHBOARD_…) and the shared etcd key. It writes one JSON report
// per line on stdout (ready, then one per reload attempt), serves its
// status on a loopback port, and exits when its stdin closes.
func member(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("member", flag.ContinueOnError)
	name := fs.String("name", "member", "name in reports")
	file := fs.String("file", "", "clients.yaml of this member")
	endpoint := fs.String("endpoint", "", "etcd client URL")
	key := fs.String("key", "/switchboard/clients.yaml", "etcd key holding the shared YAML")
	readTimeout := fs.Duration("read-timeout", etcdsource.DefaultReadTimeout, "bound of each etcd read")
	target := fs.String("target", "", "URL /call requests through the billing client")
	reconnect := fs.Duration("reconnect-max", time.Second, "longest wait between gRPC's attempts to reach etcd again")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{*endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		// gRPC's reconnect backoff grows to 120s by default, so after a
		// long outage a member could take minutes to see etcd back.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: *reconnect},
			MinConnectTimeout: 5 * time.Second,
		})},
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	src := etcdsource.Key(cli, *key, etcdsource.Options{ReadTimeout: *readTimeout, Logger: log})

	out := &reporter{w: stdout, name: *name}
	var clients *factory.Registry
	opened := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients, err = factory.Open(ctx, factory.Options{
		File: *file, Sources: []config.Source{src}, EnvPrefix: "SWITCHBOARD_", Logger: log,
		OnReload: func(e factory.ReloadEvent) {
			<-opened // a reload racing Open reports once Open returned
			if clients == nil {
				return
			}
			r := state(clients)
			r.Event, r.Generation = "applied", e.Generation
			if e.Err != nil {
				r.Event, r.Error = "rejected", e.Err.Error()
			}
			out.report(r)
		},
	})
	close(opened)
	if err != nil {
		return err
	}
	defer clients.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/switchboard", clients.Handler())
	mux.HandleFunc("/call", func(w http.ResponseWriter, _ *http.Request) {
		resp, err := clients.Get("billing").Get(*target)
		if err != nil {
			fmt.Fprintln(w, errors.Unwrap(err))
			return
		}
		resp.Body.Close()
		fmt.Fprintln(w, resp.Status)
	})
	mux.HandleFunc("/reload", func(w http.ResponseWriter, _ *http.Request) {
		if err := clients.Reload(); err != nil {
			fmt.Fprintln(w, err)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	r := state(clients)
	r.Event, r.Addr, r.Generation = "ready", ln.Addr().String(), clients.Status().Generation
	r.Provenance = provenance(ctx, config.Loader{File: *file, Sources: []config.Source{src}, EnvPrefix: "SWITCHBOARD_"})
	out.report(r)

	_, _ = io.Copy(io.Discard, bufio.NewReader(stdin)) // until stdin closes
	return nil
}

// state returns billing's settings as the registry serves them.
func state(clients *factory.Registry) fleetproc.Report {
	for _, c := range clients.Status().Clients {
		if c.Name == "billing" {
			return fleetproc.Report{MaxRetries: c.Config.Retry.MaxRetries, Timeout: c.Config.Timeout.String(), RPS: c.Config.RateLimit.RequestsPerSecond}
		}
	}
	return fleetproc.Report{}
}

// provenance loads the layers as the registry does and says where three
// of billing's keys come from.
func provenance(ctx context.Context, l config.Loader) map[string]string {
	cfg, err := l.LoadContext(ctx)
	if err != nil {
		return map[string]string{"error": err.Error()}
	}
	out := map[string]string{}
	for _, key := range []string{"retry.max_retries", "timeout", "rate_limit.requests_per_second"} {
		o, _ := cfg.Provenance.Of("billing", key)
		switch o.Layer {
		case config.LayerFile:
			out[key] = fmt.Sprintf("file %s:%d", filepath.Base(o.Name), o.Line)
		case config.LayerBuiltin:
			out[key] = "built-in default"
		default:
			out[key] = o.Layer.String() + " " + o.Name
		}
	}
	return out
}

// reporter writes reports as JSON lines, one at a time.
type reporter struct {
	mu   sync.Mutex
	w    io.Writer
	name string
}

func (r *reporter) report(rep fleetproc.Report) {
	rep.Member = r.name
	b, _ := json.Marshal(rep)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.Write(append(b, '\n'))
}
