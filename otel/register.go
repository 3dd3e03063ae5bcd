package otelswitchboard

import (
	"context"
	"math"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// breakerStates are the values of switchboard.circuit_breaker.state, as
// middleware.BreakerState spells them.
var breakerStates = [...]string{
	middleware.BreakerClosed.String(), middleware.BreakerHalfOpen.String(), middleware.BreakerOpen.String(),
}

// Register registers reg with t: the observable gauges read reg.Status()
// at every collection, the first one included, so a breaker that never
// changed state is reported closed from the start. The returned func
// undoes it; call it before reg.Close, or let the meter provider's
// Shutdown end the gauges. Register each registry once: two registries
// with a client of the same name would report the same series. Calls need
// no Register: Instrument names each client's layers when its pipeline is
// built.
func (t *Telemetry) Register(reg *factory.Registry) (unregister func() error, err error) {
	r, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.observe(o, reg.Status())
		return nil
	}, t.breakerState, t.bulkheadInUse, t.bulkheadLimit, t.budgetBalance, t.limiterTokens, t.generation)
	if err != nil {
		return nil, err
	}
	return r.Unregister, nil
}

// observe reports one Status snapshot to the gauges.
func (t *Telemetry) observe(o metric.Observer, s factory.Status) {
	o.ObserveInt64(t.generation, int64(s.Generation))
	for _, c := range s.Clients {
		client := attribute.String(attrClient, c.Name)
		hosts := make([]string, 0, len(c.Breaker))
		for host := range c.Breaker {
			hosts = append(hosts, host)
		}
		// Sorted, so that the cap keeps the same hosts at every collection;
		// "" (scope client) sorts first and is not a host.
		slices.Sort(hosts)
		if limit := max(t.hosts.max, 0); len(hosts) > 0 && hosts[0] != "" && len(hosts) > limit {
			hosts = hosts[:limit]
		}
		for _, host := range hosts {
			state := c.Breaker[host]
			for _, st := range breakerStates {
				v := int64(0)
				if st == state {
					v = 1
				}
				if host == "" {
					o.ObserveInt64(t.breakerState, v, metric.WithAttributes(client, attribute.String(attrBreakerState, st)))
				} else {
					o.ObserveInt64(t.breakerState, v, metric.WithAttributes(client, attribute.String(attrBreakerHost, host), attribute.String(attrBreakerState, st)))
				}
			}
		}
		if c.BulkheadLimit > 0 {
			o.ObserveInt64(t.bulkheadInUse, int64(c.BulkheadInUse), metric.WithAttributes(client))
			o.ObserveInt64(t.bulkheadLimit, int64(c.BulkheadLimit), metric.WithAttributes(client))
		}
		if !math.IsInf(c.BudgetBalance, 0) && !math.IsNaN(c.BudgetBalance) {
			o.ObserveFloat64(t.budgetBalance, c.BudgetBalance, metric.WithAttributes(client))
		}
		if c.LimiterTokens != nil {
			o.ObserveFloat64(t.limiterTokens, *c.LimiterTokens, metric.WithAttributes(client))
		}
	}
}
