package middleware

// DefaultBreakerMaxHosts is how many hosts a breaker of scope host tracks
// when BreakerOptions.MaxHosts is zero.
const DefaultBreakerMaxHosts = 1024

// hostTable holds the circuits of a breaker of scope host, one per URL host,
// and never more than max of them. Circuits sit in one of two LRU lists,
// most recently used first: closed ones, and open or half-open ones. A new
// host that finds the table full evicts the least recently used closed
// circuit; only when every circuit is open or half-open does it evict the
// least recently used of those, whose host then starts afresh, closed, at
// its next call. Evicting an open circuit loses some protection for one
// host; the alternatives, refusing to track new hosts or rejecting their
// calls, would let a burst of dead hosts disable the breaker for live ones
// or fail calls to healthy hosts. A closed circuit holds nothing but counts,
// so evicting one costs at most a few failures of memory.
//
// A hostTable is not safe for concurrent use: the Breaker calls every
// method with its mu held.
type hostTable struct {
	m      map[string]*circuit
	closed circuitList
	other  circuitList
}

// get returns the circuit of host, creating it (and evicting one when the
// table holds max) if need be, and marks it most recently used. Creating a
// circuit allocates it and grows the map: one allocation per new host.
func (t *hostTable) get(host string, max int, cf *breakerConf) *circuit {
	if c, ok := t.m[host]; ok {
		t.touch(c)
		return c
	}
	if t.m == nil {
		t.m = make(map[string]*circuit)
	}
	for len(t.m) >= max && t.evict() {
	}
	c := &circuit{host: host}
	c.publish(cf)
	t.m[host] = c
	t.touch(c)
	return c
}

// touch moves c to the front of the list its state belongs in. It does
// nothing for an evicted circuit.
func (t *hostTable) touch(c *circuit) {
	closed := c.state == BreakerClosed
	if c.evicted || (c.inClosed == closed && t.list(c).head == c) {
		return // the hot host of a busy client is already in place
	}
	t.unlink(c)
	c.inClosed = closed
	l := t.list(c)
	c.prev, c.next = nil, l.head
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	if l.tail == nil {
		l.tail = c
	}
}

// evict drops the least recently used closed circuit, or the least
// recently used of all when none is closed. It reports whether it dropped
// one.
func (t *hostTable) evict() bool {
	c := t.closed.tail
	if c == nil {
		c = t.other.tail
	}
	if c == nil {
		return false
	}
	t.unlink(c)
	delete(t.m, c.host)
	c.evicted = true
	c.closedGen.Store(0)
	c.cleanGen.Store(0)
	return true
}

// reset drops every circuit; outcomes of calls in flight on them are
// ignored.
func (t *hostTable) reset() {
	for _, c := range t.m {
		c.evicted = true
		c.closedGen.Store(0)
		c.cleanGen.Store(0)
	}
	*t = hostTable{}
}

// list returns the list c belongs in according to c.inClosed.
func (t *hostTable) list(c *circuit) *circuitList {
	if c.inClosed {
		return &t.closed
	}
	return &t.other
}

// unlink takes c out of its list, if it is in one.
func (t *hostTable) unlink(c *circuit) {
	l := t.list(c)
	if c.prev == nil && l.head != c {
		return // not linked
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.next = nil, nil
}

// circuitList is an intrusive doubly linked list of circuits, most recently
// used at head.
type circuitList struct {
	head, tail *circuit
}
