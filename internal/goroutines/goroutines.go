// Package goroutines counts, for tests, the goroutines that a "no
// goroutine per request" rule is about, without counting those of other
// tests that run in the same process.
package goroutines

import (
	"bytes"
	"runtime"
)

// watcherCreator is the frame that starts the goroutine the context
// package runs when a derived context cannot be linked to its parent by
// bookkeeping alone (a parent whose Done channel it does not know).
const watcherCreator = "created by context.(*cancelCtx).propagateCancel"

// ContextWatchers returns how many goroutines the context package runs
// now to watch a parent context it cannot link to otherwise. Called in a
// testing/synctest bubble, it counts only that bubble's; elsewhere, every
// goroutine of the process. runtime.NumGoroutine would count the
// goroutines of every test running or winding down in the process, which
// made exact comparisons fail now and then on a loaded machine. It is safe
// for concurrent use.
func ContextWatchers() int {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	blocks := bytes.Split(buf, []byte("\n\n"))
	bubble := bubbleOf(blocks[0]) // the first is the caller's goroutine
	count := 0
	for _, b := range blocks {
		if bytes.Contains(b, []byte(watcherCreator)) && (bubble == nil || bytes.Equal(bubbleOf(b), bubble)) {
			count++
		}
	}
	return count
}

// bubbleOf returns the "synctest bubble N" of a goroutine's stack block,
// read from its header line, or nil outside a bubble.
func bubbleOf(block []byte) []byte {
	header, _, _ := bytes.Cut(block, []byte("\n"))
	_, after, ok := bytes.Cut(header, []byte("synctest bubble "))
	if !ok {
		return nil
	}
	id, _, _ := bytes.Cut(after, []byte("]"))
	return id
}
