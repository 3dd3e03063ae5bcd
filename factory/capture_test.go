package factory_test

import (
	"io"
	"log"

	"github.com/switchboard-http/switchboard/internal/eventrec"
)

// eventLog is an Observer that keeps every event (internal/eventrec).
type eventLog struct{ eventrec.Recorder }

// names returns how many events of each name arrived.
func (l *eventLog) names() map[string]int { return l.Counts() }

// discardStdLog is a *log.Logger that writes nowhere.
func discardStdLog() *log.Logger { return log.New(io.Discard, "", 0) }
