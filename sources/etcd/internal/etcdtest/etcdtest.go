// Package etcdtest runs a real, single-member etcd in the process, with
// go.etcd.io/etcd/server/v3/embed, for the tests and the fleet example: on
// 127.0.0.1 ports of its own, with its data in a directory the caller
// gives, stopped and started again on the same ports and data.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is one embedded etcd member. Its methods are safe for concurrent
// use.
type Server struct {
	dir                string
	clientURL, peerURL url.URL
	mu                 sync.Mutex
	e                  *embed.Etcd
}

// Start starts a member with its data in dir (created if need be), on two
// free loopback ports, and waits until it serves.
func Start(dir string) (*Server, error) {
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		dir:       dir,
		clientURL: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", cport)},
		peerURL:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", pport)},
	}
	if err := s.Restart(); err != nil {
		return nil, err
	}
	return s, nil
}

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Endpoint is the client URL, for clientv3.Config.Endpoints.
func (s *Server) Endpoint() string { return s.clientURL.String() }

// Dir is the data directory.
func (s *Server) Dir() string { return s.dir }

// Restart starts the member again after Stop, on the same ports and data,
// and waits until it serves. It does nothing while the member runs.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e != nil {
		return nil
	}
	cfg := embed.NewConfig()
	cfg.Name = "switchboard-test"
	cfg.Dir = s.dir
	cfg.ListenClientUrls = []url.URL{s.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{s.clientURL}
	cfg.ListenPeerUrls = []url.URL{s.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{s.peerURL}
	cfg.InitialCluster = cfg.Name + "=" + s.peerURL.String()
	cfg.LogLevel = "error"
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.TickMs, cfg.ElectionMs = 10, 100 // a lone member elects itself at once
	cfg.EnableGRPCGateway = false
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("start etcd: %w", err)
	case <-time.After(30 * time.Second):
		e.Close()
		return errors.New("start etcd: not ready within 30s")
	}
	s.e = e
	return nil
}

// Stop stops the member; its clients' requests then fail or wait until
// Restart. It does nothing when the member is stopped.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e == nil {
		return
	}
	s.e.Close()
	s.e = nil
}

// Client returns a client of the member with a quiet logger, which the
// caller closes.
func (s *Server) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{s.Endpoint()},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// Put writes key = value with a client of its own, bounded by ctx.
func Put(ctx context.Context, cli *clientv3.Client, key, value string) (rev int64, err error) {
	resp, err := cli.Put(ctx, key, value)
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}
