package factory_test

import (
	"context"
	"slices"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// TestSourceEditAddingAnEmptyListOrMapIsApplied: a store edit that only
// adds `retryable_status: []` or a client `search: {}` changes the config,
// so Reload applies it rather than skipping it as unchanged input.
func TestSourceEditAddingAnEmptyListOrMapIsApplied(t *testing.T) {
	tree := func(extra func(clients map[string]any)) map[string]any {
		clients := map[string]any{"billing": map[string]any{"retry": map[string]any{"max_retries": 2}}}
		if extra != nil {
			extra(clients)
		}
		return map[string]any{"clients": clients}
	}
	src := &memSource{name: "mem", tree: tree(nil)}
	r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	src.set(tree(func(c map[string]any) {
		c["billing"].(map[string]any)["retry"].(map[string]any)["retryable_status"] = []any{}
	}), nil, "")
	if err := r.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	st := r.Status()
	if st.Generation != 2 || st.LastError != nil {
		t.Fatalf("after adding retryable_status: []: generation %d, last error %v; want 2, nil", st.Generation, st.LastError)
	}
	if got := statusOf(st, "billing").Config.Retry.RetryableStatus; got == nil || len(got) != 0 {
		t.Fatalf("billing retryable_status: got %v, want the empty list (retry no status)", got)
	}

	src.set(tree(func(c map[string]any) {
		c["billing"].(map[string]any)["retry"].(map[string]any)["retryable_status"] = []any{}
		c["search"] = map[string]any{}
	}), nil, "")
	if err := r.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if st := r.Status(); st.Generation != 3 || !slices.Contains(r.Names(), "search") {
		t.Fatalf("after adding search: {}: generation %d, names %v; want 3 and search defined", st.Generation, r.Names())
	}
}
