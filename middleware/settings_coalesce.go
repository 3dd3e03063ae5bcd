package middleware

// DefaultCoalesceMaxBody is the built-in coalesce.max_body: 1 MiB.
const DefaultCoalesceMaxBody = 1 << 20

// CoalesceSettings is the `coalesce` block: concurrent identical calls
// share one trip through the pipeline (see Coalesce). The zero value is
// off; DefaultCoalesceSettings returns the built-in values. A plain value:
// safe for concurrent reads; its lists are shared by copies, so do not
// change them once the value is handed out.
type CoalesceSettings struct {
	// Enabled switches coalescing on.
	Enabled bool `koanf:"enabled" json:"enabled"`
	// Methods lists the methods whose calls are coalesced, matched
	// exactly (an empty request method is GET). Nil means
	// DefaultCoalesceMethods (GET, HEAD); an empty list coalesces nothing.
	Methods []string `koanf:"methods" json:"methods"`
	// VaryHeaders lists the request headers whose values are part of the
	// identity of a call: calls that differ in one of them never share a
	// trip. Names are case-insensitive. Authorization, Cookie,
	// Proxy-Authorization, Range and the conditional headers are always part
	// of it, listed or not.
	// Nil means DefaultCoalesceVaryHeaders (Authorization, Accept,
	// Accept-Encoding); an empty list leaves the method, the URL and the
	// headers always counted.
	VaryHeaders []string `koanf:"vary_headers" json:"vary_headers"`
	// MaxBody is the largest response body, in bytes, that is shared: a
	// trip buffers up to MaxBody+1 bytes; a larger answer goes to one
	// caller as a stream and every other caller sends its own request.
	// Zero shares only answers without a body.
	MaxBody int64 `koanf:"max_body" json:"max_body" minimum:"0"`
}

// DefaultCoalesceMethods returns the methods coalesced when
// CoalesceSettings.Methods is nil: GET and HEAD. Each call returns a new
// slice.
func DefaultCoalesceMethods() []string { return []string{"GET", "HEAD"} }

// DefaultCoalesceVaryHeaders returns the headers that are part of a call's
// identity when CoalesceSettings.VaryHeaders is nil: Authorization, Accept
// and Accept-Encoding. Each call returns a new slice.
func DefaultCoalesceVaryHeaders() []string {
	return []string{"Authorization", "Accept", "Accept-Encoding"}
}

// DefaultCoalesceSettings returns the built-in coalesce settings: off, GET
// and HEAD, the default vary headers, a 1 MiB max_body.
func DefaultCoalesceSettings() CoalesceSettings {
	return CoalesceSettings{
		Methods:     DefaultCoalesceMethods(),
		VaryHeaders: DefaultCoalesceVaryHeaders(),
		MaxBody:     DefaultCoalesceMaxBody,
	}
}
