package scenario

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// CallHeader carries the number of the logical call an attempt belongs to,
// so that the server counts attempts per call whatever the client does in
// between (retries and hedges copy the caller's headers).
const CallHeader = "X-Scenario-Call"

// Fault is what the server does to each attempt, decided by the server
// alone: the clients cannot tell a fault from a real failure. The zero
// Fault answers 200 at once.
type Fault struct {
	// Down answers every attempt 503 at once: the backend is gone and what
	// answers is the load balancer in front of it.
	Down bool
	// Unavailable is the share of attempts answered 503 at once.
	Unavailable float64
	// Slow is the share of the other attempts that take SlowDelay instead
	// of Latency before their 200.
	Slow      float64
	SlowDelay time.Duration
	// Latency is how long a normal attempt takes before its 200.
	Latency time.Duration
}

// Server is a loopback HTTP server (httptest, 127.0.0.1) that injects its
// current Fault into each attempt. Its decisions come from one random
// source seeded by NewServer, drawn in the order attempts arrive, so every
// stack sees the same sequence of faults. It counts attempts per
// CallHeader value. Safe for concurrent use.
type Server struct {
	URL string

	srv   *httptest.Server
	fault atomic.Pointer[Fault]

	mu       sync.Mutex // guards rng, attempts and delayed
	rng      *rand.Rand
	attempts map[uint64]int
	delayed  int
}

// NewServer starts a Server answering the zero Fault; Close stops it.
func NewServer(seed uint64) *Server {
	s := &Server{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), attempts: map[uint64]int{}}
	s.fault.Store(&Fault{})
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Set makes f the fault of every attempt that arrives from now on.
func (s *Server) Set(f Fault) { s.fault.Store(&f) }

// Attempts returns how many attempts of logical call id have arrived.
func (s *Server) Attempts(id uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[id]
}

// Delayed returns how many attempts have been given SlowDelay.
func (s *Server) Delayed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delayed
}

// Close stops the server once the attempts in progress have ended (a
// delayed attempt ends early when its client goes away).
func (s *Server) Close() { s.srv.Close() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseUint(r.Header.Get(CallHeader), 10, 64)
	f := s.fault.Load()
	s.mu.Lock()
	s.attempts[id]++
	// Two draws for every attempt, whatever the fault, so that the
	// sequence stays aligned across stacks.
	unavailable, slow := s.rng.Float64(), s.rng.Float64()
	down := f.Down || unavailable < f.Unavailable
	d := f.Latency
	if !down && slow < f.Slow {
		d = f.SlowDelay
		s.delayed++
	}
	s.mu.Unlock()

	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("unavailable"))
		return
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done(): // a cancelled hedge or a caller gone
			t.Stop()
			return
		}
	}
	_, _ = w.Write([]byte(okBody))
}

// okBody is the body of every 200.
const okBody = "ok"
