package factory

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/switchboard-http/switchboard/config"
)

// SourceStatus is the state of one of Options.Sources, as Status reports
// it. A plain value.
type SourceStatus struct {
	// Name is the Source's Name().
	Name string `json:"name"`
	// Stale is true when the Source's last Read failed and the registry
	// serves its last good snapshot instead; false once a Read succeeds.
	Stale bool `json:"stale"`
	// LastError is why the last Read failed (redacted); "" when it
	// succeeded.
	LastError string `json:"last_error,omitempty"`
}

// sourceSet keeps, for each of the registry's Sources, the snapshot of its
// last applied content, so that a reload during a Source's outage still
// applies the other layers' changes: the Loader reads the Sources through
// it. At Open nothing is kept yet, and a failed Read fails the load. It is
// safe for concurrent use.
type sourceSet struct {
	list []*snapshotSource
}

// newSourceSet wraps srcs.
func newSourceSet(srcs []config.Source) *sourceSet {
	s := &sourceSet{list: make([]*snapshotSource, len(srcs))}
	for i, src := range srcs {
		s.list[i] = &snapshotSource{src: src}
	}
	return s
}

// wrapped returns the Sources to hand the Loader.
func (s *sourceSet) wrapped() []config.Source {
	out := make([]config.Source, len(s.list))
	for i, w := range s.list {
		out[i] = w
	}
	return out
}

// open is called once Open's load was applied: that content is the first
// good snapshot, and from now on a failed Read falls back to it.
func (s *sourceSet) open(log *slog.Logger) {
	for _, w := range s.list {
		w.mu.Lock()
		w.fallback, w.log = true, log
		w.mu.Unlock()
	}
	s.commit()
}

// commit records what each Source last returned as its good snapshot, and
// its state then as the state Status shows: the load that read it was
// applied (or was the one serving already). A rejected load commits
// nothing, so it changes nothing that Status shows but LastError.
func (s *sourceSet) commit() {
	for _, w := range s.list {
		w.mu.Lock()
		w.good, w.hasGood = w.read, true
		w.stale, w.lastErr = w.readStale, w.readErr
		w.mu.Unlock()
	}
}

// status returns each Source's state, in Options.Sources order.
func (s *sourceSet) status() []SourceStatus {
	if len(s.list) == 0 {
		return nil
	}
	out := make([]SourceStatus, len(s.list))
	for i, w := range s.list {
		w.mu.Lock()
		out[i] = SourceStatus{Name: w.src.Name(), Stale: w.stale, LastError: w.lastErr}
		w.mu.Unlock()
	}
	return out
}

// snapshotSource is a Source read through a sourceSet.
type snapshotSource struct {
	src config.Source

	mu       sync.Mutex
	read     map[string]any // what the last load got from it
	good     map[string]any // what the serving config was loaded from
	hasGood  bool
	fallback bool // after Open: a failed Read serves good
	// readStale and readErr are the state of the last load's read;
	// commit makes them the shown stale and lastErr.
	readStale bool
	readErr   string
	stale     bool
	lastErr   string
	outage    bool // a Read failed and none succeeded since: warned once
	log       *slog.Logger
}

func (w *snapshotSource) Name() string { return w.src.Name() }

func (w *snapshotSource) Read() (map[string]any, error) {
	return w.ReadContext(context.Background())
}

// ReadContext reads the Source (with ctx, if it takes one). When that
// fails after Open, it returns the last good snapshot and marks the read
// stale, logging one WARN naming the Source per outage; but an error
// matching config.ErrSourceContent (the store answered with a bad
// document) is returned, so the reload is rejected like one with a bad
// value. A read that ended because ctx did (Close) is an error, not an
// outage.
func (w *snapshotSource) ReadContext(ctx context.Context) (map[string]any, error) {
	tree, err := config.ReadSource(ctx, w.src)
	w.mu.Lock()
	if err == nil {
		w.read, w.readStale, w.readErr, w.outage = tree, false, "", false
		w.mu.Unlock()
		return tree, nil
	}
	if errors.Is(err, config.ErrSourceContent) || !w.fallback || !w.hasGood || ctx.Err() != nil {
		// A bad document is a bad config, rejected like one, not an outage
		// to ride out on the snapshot.
		w.mu.Unlock()
		return nil, err
	}
	msg := redactText(err).Error()
	first := !w.outage
	w.read, w.readStale, w.readErr, w.outage = w.good, true, msg, true
	good, log := w.good, w.log
	w.mu.Unlock()
	if first {
		log.Warn("config source unreadable; its last good snapshot serves, the other layers' changes still apply",
			"source", w.src.Name(), "error", msg)
	}
	return good, nil
}
