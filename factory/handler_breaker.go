package factory

import "github.com/switchboard-http/switchboard/middleware"

// breakerDoc is the JSON form of a client's breaker (see Handler): the
// state named as such, and for scope host each host's under "hosts".
type breakerDoc struct {
	State             string             `json:"state"`
	RejectProbability *float64           `json:"reject_probability,omitempty"`
	Hosts             map[string]string  `json:"hosts,omitempty"`
	HostsRejectP      map[string]float64 `json:"hosts_reject_probability,omitempty"`
	ProbeIn           *float64           `json:"probe_in_seconds,omitempty"`
	HostsProbeIn      map[string]float64 `json:"hosts_probe_in_seconds,omitempty"`
}

// breakerDocOf returns c's breaker as Handler shows it, nil when it is
// off. ClientStatus keys its maps by "" for scope client and by host for
// scope host; the scope comes from c.Config.
func breakerDocOf(c ClientStatus) *breakerDoc {
	if c.Breaker == nil {
		return nil
	}
	if c.Config.CircuitBreaker.Scope != middleware.ScopeHost {
		d := &breakerDoc{State: c.Breaker[""]}
		if p, ok := c.BreakerRejectProbability[""]; ok {
			d.RejectProbability = finite(p)
		}
		if in, ok := c.BreakerProbeIn[""]; ok {
			secs := in.Seconds()
			d.ProbeIn = &secs
		}
		return d
	}
	// Scope host: no host tracked yet reads closed, as a new host starts.
	d := &breakerDoc{State: middleware.BreakerClosed.String(), Hosts: make(map[string]string, len(c.Breaker))}
	for host, st := range c.Breaker {
		d.Hosts[host] = st
		if severity(st) > severity(d.State) {
			d.State = st
		}
	}
	// The soonest probe of an open host, and each one's.
	for host, in := range c.BreakerProbeIn {
		if d.HostsProbeIn == nil {
			d.HostsProbeIn = make(map[string]float64, len(c.BreakerProbeIn))
		}
		secs := in.Seconds()
		d.HostsProbeIn[host] = secs
		if d.ProbeIn == nil || secs < *d.ProbeIn {
			d.ProbeIn = &secs
		}
	}
	if c.BreakerRejectProbability != nil {
		d.HostsRejectP = c.BreakerRejectProbability
		var highest float64
		for _, p := range c.BreakerRejectProbability {
			highest = max(highest, p)
		}
		d.RejectProbability = finite(highest)
	}
	return d
}

// severity orders breaker states for the worst one: open over half_open
// over closed.
func severity(state string) int {
	switch state {
	case middleware.BreakerOpen.String():
		return 2
	case middleware.BreakerHalfOpen.String():
		return 1
	}
	return 0
}
