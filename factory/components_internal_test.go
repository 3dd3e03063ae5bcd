package factory

import (
	"slices"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

// TestEveryKeyBelongsToOneComponent checks the component table against
// the config's keys: a key no component covers would change a client
// without Plan saying which component changes; one covered twice would be
// planned twice.
func TestEveryKeyBelongsToOneComponent(t *testing.T) {
	for _, k := range config.Keys() {
		var owners []string
		for _, c := range components {
			if c.covers(k.Path) {
				owners = append(owners, c.name)
			}
		}
		if len(owners) != 1 {
			t.Errorf("key %s is covered by %q, want exactly one component", k.Path, owners)
		}
	}
}

// TestGroupBlocksAreComponents checks that every block config lets a
// group share is a row of the table under the same name, whose switch is
// one of its keys, and that the table shares no other component.
func TestGroupBlocksAreComponents(t *testing.T) {
	var keys []string
	for _, k := range config.Keys() {
		keys = append(keys, k.Path)
	}
	var blocks []string
	for _, b := range config.GroupBlocks() {
		blocks = append(blocks, b.Key)
		c := componentOf(b.Key)
		if c.state == nil || c.state.group == nil || c.state.group.Key != b.Key {
			t.Errorf("component %s: no group block %s in its row", c.name, b.Key)
		}
		if !slices.Contains(keys, b.Switch) || !c.covers(b.Switch) {
			t.Errorf("group block %s: switch %s is not one of its keys", b.Key, b.Switch)
		}
	}
	var rows []string
	for _, c := range groupedComponents {
		rows = append(rows, c.name)
	}
	if !slices.Equal(rows, blocks) {
		t.Errorf("shareable components %q, config's group blocks %q: want the same, in the same order", rows, blocks)
	}
}

func TestStatefulNamesTheComponentsThatKeepState(t *testing.T) {
	var got []string
	for _, c := range components {
		if Stateful(c.name) {
			got = append(got, c.name)
		}
	}
	want := []string{ComponentBreaker, ComponentBulkhead, ComponentBudget, ComponentRateLimit, ComponentTransport}
	if !slices.Equal(got, want) {
		t.Fatalf("Stateful holds for %q, want %q", got, want)
	}
	if Stateful("no such component") {
		t.Fatal("Stateful holds for a name that is no component")
	}
}
