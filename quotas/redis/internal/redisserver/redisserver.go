// Package redisserver runs a real redis-server (Debian's package) on a
// free loopback port for the tests and the example of quotas/redis: no
// persistence (--save "" --appendonly no), stopped by its PID. It never
// pretends: a missing redis-server is an error, not a skip.
package redisserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is one redis-server process (or none, between Stop and Restart)
// on 127.0.0.1:Port. The zero value is not usable; Start makes one. Its
// methods are safe for concurrent use.
type Server struct {
	// Addr is "127.0.0.1:<port>", the same across restarts.
	Addr string
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// Start runs redis-server on a free loopback port and returns once it
// answers PING (within 10s).
func Start() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	dir, err := os.MkdirTemp("", "redisserver")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: addr, dir: dir}
	if err := s.Restart(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Restart starts redis-server again on the same port after Stop (an
// empty one: nothing is persisted), and returns once it answers PING.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("redisserver: already running")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redisserver: %w (install it: apt-get install -y redis-server)", err)
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", "")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(s.Addr) {
			s.cmd = cmd // exited is buffered: the Wait goroutine ends with the process
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("redisserver: redis-server on port %s exited: %v", port, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return fmt.Errorf("redisserver: redis-server on port %s did not answer PING within 10s", port)
		}
	}
}

// Stop kills the server by its PID (SIGKILL: a crash, as an outage is)
// and returns once its port refuses connections.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	pid := s.cmd.Process.Pid
	s.cmd = nil
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("redisserver: kill %d: %w", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil || dialable(s.Addr) {
		if time.Now().After(deadline) {
			return fmt.Errorf("redisserver: pid %d still up 10s after SIGKILL", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop()
	os.RemoveAll(s.dir)
	return err
}

// ping reports whether a Redis at addr answers PING.
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// dialable reports whether something accepts connections at addr.
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// Port returns the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Freeze stops the server's process (SIGSTOP) without closing its port:
// connections hang, as with a server stuck or a network partition. Thaw
// resumes it.
func (s *Server) Freeze() error { return s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisserver: not running")
	}
	return syscall.Kill(s.cmd.Process.Pid, sig)
}
