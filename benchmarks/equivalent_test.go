package benchmarks_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-http/switchboard/benchmarks"
)

// step is one scripted answer of a scriptRT: a status, or an error.
type step struct {
	status int
	err    error
}

// errReset stands for a transport error, such as a connection reset.
var errReset = errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer")

// scriptRT answers request i with script[i] (the last step repeats). Each
// response body reads "attempt <n>" and counts its Close; a read after Close
// fails, so a body closed too early is seen. It records, for every attempt,
// how many earlier bodies were still open when it started, and the request
// body each attempt carried.
type scriptRT struct {
	script []step

	mu          sync.Mutex
	attempts    int
	opened      int
	closed      int
	openAtStart []int
	bodies      []string
}

func (s *scriptRT) RoundTrip(req *http.Request) (*http.Response, error) {
	var sent string
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body.Close()
		sent = string(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	s.openAtStart = append(s.openAtStart, s.opened-s.closed)
	s.bodies = append(s.bodies, sent)
	st := s.script[min(s.attempts, len(s.script))-1]
	if st.err != nil {
		return nil, st.err
	}
	s.opened++
	return &http.Response{
		StatusCode: st.status,
		Status:     fmt.Sprintf("%d %s", st.status, http.StatusText(st.status)),
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{},
		Body:    &trackedBody{r: strings.NewReader(fmt.Sprintf("attempt %d", s.attempts)), s: s},
		Request: req,
	}, nil
}

func (s *scriptRT) counts() (attempts, opened, closed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, s.opened, s.closed
}

// trackedBody is a response body that counts its Close and fails reads
// after it.
type trackedBody struct {
	r      *strings.Reader
	s      *scriptRT
	closed bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	b.s.mu.Lock()
	closed := b.closed
	b.s.mu.Unlock()
	if closed {
		return 0, errors.New("read after close")
	}
	return b.r.Read(p)
}

func (b *trackedBody) Close() error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if !b.closed {
		b.closed = true
		b.s.closed++
	}
	return nil
}

// equivalenceCase is one script of TestEquivalent and what every stack
// must do with it.
type equivalenceCase struct {
	name         string
	method, body string
	script       []step
	wantAttempts int
	wantStatus   int // 0: want an error
}

var equivalenceCases = []equivalenceCase{
	{"200", "GET", "", []step{{status: 200}}, 1, 200},
	{"503,503,200", "GET", "", []step{{status: 503}, {status: 503}, {status: 200}}, 3, 200},
	{"503x5 exhausts", "GET", "", []step{{status: 503}}, benchmarks.MaxRetries + 1, 503},
	{"transport error x5 exhausts", "GET", "", []step{{err: errReset}}, benchmarks.MaxRetries + 1, 0},
	{"404 not retried", "GET", "", []step{{status: 404}}, 1, 404},
	{"POST 503,200 replays body", "POST", "0123456789", []step{{status: 503}, {status: 200}}, 2, 200},
}

// TestEquivalent proves that the stacks compared by the benchmarks behave
// alike under the shared policy before their numbers are compared: for each
// script, the number of attempts, the outcome (the final status, or an
// error), that each superseded response body was closed before the next
// attempt started, that the final body reaches the caller intact (readable,
// the last attempt's), and that a POST body is replayed whole. switchboard's
// "defaults" stack is left out: its 500ms backoff would make this test sleep.
func TestEquivalent(t *testing.T) {
	names := []string{benchmarks.NameSwitchboard, benchmarks.NameRetryBreaker, benchmarks.NameFailsafe, benchmarks.NameRetryableHTTP, benchmarks.NameHeimdall, benchmarks.NameMinimal}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, tt := range equivalenceCases {
				t.Run(tt.name, func(t *testing.T) {
					rt := &scriptRT{script: tt.script}
					checkEquivalent(t, stackNamed(t, name, rt), rt, tt)
				})
			}
		})
	}
}

// checkEquivalent sends tt's request through stack, whose base is rt, and
// checks what TestEquivalent's doc lists.
func checkEquivalent(t *testing.T, stack benchmarks.Stack, rt *scriptRT, tt equivalenceCase) {
	t.Helper()
	var body io.Reader
	if tt.body != "" {
		body = strings.NewReader(tt.body)
	}
	req, err := http.NewRequest(tt.method, "http://svc.test/v1/items", body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stack.Doer.Do(req)
	attempts, _, _ := rt.counts()
	if attempts != tt.wantAttempts {
		t.Errorf("attempts: got %d, want %d", attempts, tt.wantAttempts)
	}
	if tt.wantStatus == 0 {
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got status %d, want an error", resp.StatusCode)
		}
	} else {
		if err != nil {
			t.Fatalf("got error %v, want status %d", err, tt.wantStatus)
		}
		if resp.StatusCode != tt.wantStatus {
			t.Errorf("status: got %d, want %d", resp.StatusCode, tt.wantStatus)
		}
		got, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("attempt %d", attempts); rerr != nil || string(got) != want {
			t.Errorf("final body: got %q (err %v), want %q", got, rerr, want)
		}
	}
	_, opened, closed := rt.counts()
	if opened != closed {
		t.Errorf("bodies: %d opened, %d closed; want all closed", opened, closed)
	}
	for i, open := range rt.openAtStart {
		if open != 0 {
			t.Errorf("attempt %d started with %d earlier bodies open, want 0", i+1, open)
		}
	}
	for i, sent := range rt.bodies {
		if sent != tt.body {
			t.Errorf("attempt %d sent body %q, want %q", i+1, sent, tt.body)
		}
	}
}

// stackNamed builds the stack called name over rt and closes it with t.
func stackNamed(tb testing.TB, name string, rt http.RoundTripper) benchmarks.Stack {
	tb.Helper()
	stacks, err := benchmarks.Stacks(rt)
	if err != nil {
		tb.Fatal(err)
	}
	var found *benchmarks.Stack
	for i := range stacks {
		if stacks[i].Name == name {
			found = &stacks[i]
			continue
		}
		stacks[i].Close()
	}
	if found == nil {
		tb.Fatalf("no stack %q", name)
	}
	tb.Cleanup(found.Close)
	return *found
}
