// Package fleetproc runs members of a fleet, each one OS process of the
// examples/fleet program in its "member" mode, and reads what they report:
// one JSON Report per line on stdout, and the registry's status over a
// loopback HTTP port. The fleet example and the tests share it.
package fleetproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"time"
)

// Report is one line a member writes: once "ready" after factory.Open,
// then "applied" or "rejected" after every reload attempt, with the state
// of its client billing then.
type Report struct {
	Member     string  `json:"member"`
	Event      string  `json:"event"`
	Addr       string  `json:"addr,omitempty"`
	Generation uint64  `json:"generation"`
	Error      string  `json:"error,omitempty"`
	MaxRetries int     `json:"max_retries"`
	Timeout    string  `json:"timeout"`
	RPS        float64 `json:"rps"`
	// Provenance maps a few keys of billing to where their value came
	// from ("source etcd:/switchboard/clients.yaml"); on "ready" only.
	Provenance map[string]string `json:"provenance,omitempty"`
	// At is when the line was read (not part of the JSON).
	At time.Time `json:"-"`
}

// Status is the part of factory's status JSON the fleet looks at.
type Status struct {
	Generation uint64 `json:"generation"`
	LastError  string `json:"last_error"`
	Sources    []struct {
		Name      string `json:"name"`
		Stale     bool   `json:"stale"`
		LastError string `json:"last_error"`
	} `json:"sources"`
}

// Process is one running member. Its methods are safe for concurrent use,
// except that one goroutine at a time may call Next or WaitFor.
type Process struct {
	Name  string
	Ready Report

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	reports chan Report
	stderr  *syncBuffer
	exited  chan struct{}
	once    sync.Once
}

// Start starts bin with args and env (the process's whole environment)
// and waits up to limit for its ready report.
func Start(name, bin string, args, env []string, limit time.Duration) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &Process{Name: name, cmd: cmd, stdin: stdin, reports: make(chan Report, 1000), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.reports)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r Report
			if json.Unmarshal(sc.Bytes(), &r) != nil {
				continue
			}
			r.At = time.Now()
			p.reports <- r
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	r, err := p.WaitFor(limit, func(r Report) bool { return r.Event == "ready" })
	if err != nil {
		p.Stop()
		return nil, err
	}
	p.Ready = r
	return p, nil
}

// Next returns the next report, or an error after limit or when the
// process has ended.
func (p *Process) Next(limit time.Duration) (Report, error) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case r, ok := <-p.reports:
		if !ok {
			return Report{}, fmt.Errorf("member %s ended: %s", p.Name, p.stderr.String())
		}
		return r, nil
	case <-t.C:
		return Report{}, fmt.Errorf("member %s: no report within %v", p.Name, limit)
	}
}

// WaitFor reads reports until one satisfies ok, for at most limit.
func (p *Process) WaitFor(limit time.Duration, ok func(Report) bool) (Report, error) {
	deadline := time.Now().Add(limit)
	for {
		r, err := p.Next(time.Until(deadline))
		if err != nil {
			return Report{}, err
		}
		if ok(r) {
			return r, nil
		}
	}
}

// Status fetches the registry's status from the member.
func (p *Process) Status() (Status, error) {
	var s Status
	body, err := p.get("/debug/switchboard")
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(body, &s)
}

// Call makes the member send one request through its billing client and
// returns what it answered ("200 OK", or the error).
func (p *Process) Call() (string, error) {
	b, err := p.get("/call")
	return string(bytes.TrimSpace(b)), err
}

// Reload makes the member reload now (Registry.Reload) and returns its
// error text, "" when applied or unchanged.
func (p *Process) Reload() (string, error) {
	b, err := p.get("/reload")
	return string(bytes.TrimSpace(b)), err
}

func (p *Process) get(path string) ([]byte, error) {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + p.Ready.Addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("member %s %s: %s: %s", p.Name, path, resp.Status, b)
	}
	return b, err
}

// Stop closes the member's stdin, which makes it close its registry and
// exit, and waits up to 10s for that before it kills it. It returns the
// member's stderr when it did not exit cleanly.
func (p *Process) Stop() error {
	var err error
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			err = errors.New("member " + p.Name + " did not exit within 10s of its stdin closing")
		}
		for range p.reports { // let the reader end
		}
		if err == nil && !p.cmd.ProcessState.Success() {
			err = fmt.Errorf("member %s: %v: %s", p.Name, p.cmd.ProcessState, p.stderr.String())
		}
	})
	return err
}

// Stderr returns what the member wrote on stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
