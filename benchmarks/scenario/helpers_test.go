package scenario_test

import (
	"context"
	"net/http"
)

// httpGet returns a GET of url bound to ctx.
func httpGet(ctx context.Context, url string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
}
