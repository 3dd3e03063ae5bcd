package config_test

import (
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
)

// Each shareable block says when its component is on and which group it
// joins; a client with it off shares nothing.
func TestGroupBlocksSayOnAndGroup(t *testing.T) {
	c := config.Default()
	c.Bulkhead.Group = "payments"
	b, ok := config.GroupBlockOf("bulkhead")
	if !ok || b.Switch != "bulkhead.max_concurrent" {
		t.Fatalf("GroupBlockOf(bulkhead) = %+v, %v", b, ok)
	}
	if b.On(c) || b.Group(c) != "payments" || b.Shares(c) != "" {
		t.Fatalf("bulkhead off: On %v, Group %q, Shares %q; want false, payments, none", b.On(c), b.Group(c), b.Shares(c))
	}
	c.Bulkhead.MaxConcurrent = 4
	if !b.On(c) || b.Shares(c) != "payments" {
		t.Fatalf("bulkhead on: On %v, Shares %q", b.On(c), b.Shares(c))
	}
	other := c
	other.Retry.MaxRetries = 9 // not a bulkhead key
	if !b.Equal(c, other) {
		t.Fatal("Equal: a change outside the block is a difference")
	}
	other.Bulkhead.MaxWait = time.Second
	if b.Equal(c, other) {
		t.Fatal("Equal: bulkhead.max_wait differs, yet the blocks are equal")
	}
	if _, ok := config.GroupBlockOf("retry"); ok {
		t.Fatal("GroupBlockOf(retry): retry cannot be shared")
	}
	var zero config.GroupBlock
	if zero.On(c) || zero.Group(c) != "" {
		t.Fatal("the zero GroupBlock is on or names a group")
	}
	var keys []string
	for _, b := range config.GroupBlocks() {
		keys = append(keys, b.Key)
	}
	if len(keys) != 3 || keys[0] != "circuit_breaker" || keys[1] != "bulkhead" || keys[2] != "rate_limit" {
		t.Fatalf("GroupBlocks = %q, want circuit_breaker, bulkhead, rate_limit", keys)
	}
}
