package factory

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// Handler returns an http.Handler for an ops endpoint: a live status page
// for people, the registry's status as JSON for tools. It answers GET and
// HEAD only (other methods get 405), and:
//
//   - HTML, the status page, to a request whose Accept ranks text/html
//     above application/json (a browser's); ?format=html forces it;
//   - JSON otherwise (no Accept, curl's */*, application/json);
//     ?format=json forces it; any other ?format is a 400;
//   - ?asset=status.js, status.css or favicon.svg: the page's own files
//     (any other name is a 404).
//
// The page and its files come from an embed.FS, with
// Content-Security-Policy: default-src 'self' (no inline script or style,
// no other host). Every URL in the page is a query relative to the page
// itself ("?asset=status.js", "?format=json"), so the handler serves
// everything from its own path wherever it is mounted, under a prefix and
// behind http.StripPrefix alike, with no route beside it. The page polls
// ?format=json every second and redraws itself with DOM calls and
// textContent only (never markup built from data): polling costs a
// request a second per open page and holds nothing in the server between
// them, where a server-sent-events stream would hold a goroutine and a
// timer per viewer. It shows the generation, when it was applied and the
// last reload error in red; each Source and whether it is stale; a tile
// per client and per shared group (breaker badge: closed, open with the
// time to the next probe, half-open, adaptive throttling with its
// probability; bulkhead in use / limit, rate-limit tokens, retry budget,
// hedge delay, fault injection on in red, and the client's call rate and
// failure percentage over the last 5 minutes as sparklines, drawn from
// the differences of successive polls' cumulative counts); the last 20
// reloads; and per client, on demand, the keys that differ from the
// built-in defaults with where each was set, and the whole effective
// config.
//
// The JSON document, every field of it:
//
//	{
//	  "generation": 3,                 // Status.Generation: applied configs, the first is 1
//	  "last_reload": "2025-…Z",        // when the serving generation was applied (RFC 3339)
//	  "last_error": "config …",        // why the last reload was rejected, redacted; absent when it applied
//	  "clients": [{                    // every client defined or handed out, sorted by name
//	    "name": "billing",
//	    "defined": true,               // false: a name only Get saw, following defaults
//	    "config_hash": "9f2c…",        // SHA-256 of the effective config: equal hashes, equal configs
//	    "generation": 2,               // the generation that built the client's pipeline
//	    "budget_balance": 12.4,        // retries the retry budget allows right now (see below); null when off
//	    "breaker": {                   // absent when circuit_breaker.enabled is false
//	      "state": "closed",           // closed | open | half_open; for scope host the worst host's
//	      "probe_in_seconds": 12.5,    // open only: time until the next probe (scope host: the soonest host's)
//	      "reject_probability": 0.1,   // mode adaptive only: chance the next call is rejected locally (the highest host's)
//	      "hosts": {"a.internal": "open"},           // scope host only: each tracked URL host's state
//	      "hosts_probe_in_seconds": {"a.internal": 12.5}, // scope host only: each open host's time to its probe
//	      "hosts_reject_probability": {"a.internal": 0.3} // scope host and mode adaptive only
//	    },
//	    "bulkhead_in_use": 1,          // bulkhead slots taken now; 0 when off
//	    "bulkhead_limit": 4,           // bulkhead.max_concurrent, or the learned limit in mode adaptive; 0 when off
//	    "bulkhead_mode": "static",     // static | adaptive; absent when off
//	    "limiter_tokens": 1.5,         // rate-limit tokens available now; absent when off or scope fleet
//	    "quota_mode": "store",         // scope fleet: store, or fallback while the store fails
//	    "routes": ["GET /v1/reports/{id}"], // the patterns of the client's routes, sorted; absent when none
//	    "groups": {"rate_limit": "billing"}, // each component shared with other clients, by block, and its group; absent when none
//	    "fault": {…},                  // the fault block while fault.enabled, so a game day left on shows
//	    "calls": 1200,                 // logical calls since the registry was made, any outcome (Status.Clients[i].Calls)
//	    "failures": 31,                // of which failed: status >= 500, transport error, the client's timeout
//	    "rejections": 4,               // of which refused locally: breaker open, bulkhead full, rate limited
//	    "coalesce_joined": 80,         // calls that joined a coalesced trip under way (coalesce.enabled)
//	    "hedge_delay_seconds": 0.15,   // hedging on only: the wait before each extra copy now
//	    "non_default": [{              // every key that differs from the built-in defaults; absent when none
//	      "key": "retry.max_retries", "value": "5", "default": "3",
//	      "origin": {"layer": "file", "name": "clients.yaml", "line": 12, "path": "clients.billing.retry.max_retries"}
//	    }],                            // origin absent for a config built in code (no provenance)
//	    "config": {…}                  // the effective config, keys as in the file (see below)
//	  }],
//	  "sources": [{                    // Options.Sources in order; absent without
//	    "name": "etcd",
//	    "stale": false,                // true: its last Read failed and its last good snapshot serves
//	    "last_error": "…"              // why that Read failed, redacted; absent when it succeeded
//	  }],
//	  "reloads": [{                    // the last 20 attempts, newest first (Status.Reloads)
//	    "time": "2025-…Z", "generation": 3,
//	    "result": "rejected",          // applied | rejected
//	    "error": "config …",           // rejected only, redacted
//	    "changed": ["billing"]         // the clients it rebuilt; [] when rejected
//	  }]
//	}
//
// A rate is the difference of two snapshots' calls over the time between
// them; the counts only grow, for the registry's life.
//
// budget_balance is how many retries the client's retry budget would let
// through at this moment, across all its calls: retry.budget.ratio times
// the first attempts of the last retry.budget.ttl, plus
// retry.budget.min_per_second times ttl, minus the retries already spent
// in that window. With the defaults (min_per_second 10, ttl 10s, ratio
// 0.2) an idle client reads 100, and each first attempt adds 0.2 for ttl
// (100.2 after one call). Below 1 retries are refused and
// retry.budget_exhausted is logged; it may go negative after a reload
// lowers the ratio. null when the budget is off (ttl 0).
//
// Under "config" and "non_default", and so on the page, secrets never
// appear (it is ClientStatus.Config, which Status redacts): values of keys
// tagged secret:"true" (auth.bearer_token, auth.basic.password) read
// "REDACTED" when set, values of headers whose name is sensitive
// (middleware.IsSensitiveHeader) too, and transport.proxy_url's userinfo
// reads REDACTED@ (http://REDACTED@proxy:3128), so a configured credential
// shows, and its sensitive query values read REDACTED. Names of secret
// files are shown. Durations are Go duration strings; numbers that are
// not finite are null (JSON has no infinity).
//
// Mount it on an internal listener only: it tells whoever asks how the
// clients are configured. The handler is safe for concurrent use; each
// request takes a fresh, consistent snapshot.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if asset := req.URL.Query().Get("asset"); asset != "" {
			serveStatusPage(w, req, asset)
			return
		}
		format, ok := statusFormat(req)
		if !ok {
			http.Error(w, `format must be "json" or "html"`, http.StatusBadRequest)
			return
		}
		if format == formatHTML {
			serveStatusPage(w, req, "")
			return
		}
		s := r.Status()
		doc := statusDocOf(s)
		for i, c := range s.Clients {
			doc.Clients[i].Config = configDoc(c.Config)
			if c.Fault != nil { // shown apart too: a game day left on must show
				doc.Clients[i].Fault = doc.Clients[i].Config["fault"]
			}
		}
		body, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			http.Error(w, "encoding status failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if req.URL.Query().Get("format") == "" {
			w.Header().Add("Vary", "Accept")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if req.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(append(body, '\n'))
	})
}

// statusDoc is the JSON form of Status.
type statusDoc struct {
	Generation uint64         `json:"generation"`
	LastReload time.Time      `json:"last_reload"`
	LastError  string         `json:"last_error,omitempty"`
	Clients    []clientDoc    `json:"clients"`
	Sources    []SourceStatus `json:"sources,omitempty"`
	Reloads    []reloadDoc    `json:"reloads"`
}

// reloadDoc is the JSON form of a ReloadRecord.
type reloadDoc struct {
	Time       time.Time `json:"time"`
	Generation uint64    `json:"generation"`
	Result     string    `json:"result"` // applied | rejected
	Error      string    `json:"error,omitempty"`
	Changed    []string  `json:"changed"`
}

// configKeyDoc is the JSON form of a ConfigKey.
type configKeyDoc struct {
	Key     string     `json:"key"`
	Value   string     `json:"value"`
	Default string     `json:"default"`
	Origin  *originDoc `json:"origin,omitempty"`
}

// originDoc is the JSON form of a config.Origin.
type originDoc struct {
	Layer string `json:"layer"`
	Name  string `json:"name,omitempty"`
	Line  int    `json:"line,omitempty"`
	Path  string `json:"path,omitempty"`
}

// clientDoc is the JSON form of ClientStatus, with non-finite numbers as
// null and, in Handler, the effective config.
type clientDoc struct {
	Name           string            `json:"name"`
	Defined        bool              `json:"defined"`
	ConfigHash     string            `json:"config_hash"`
	Generation     uint64            `json:"generation"`
	BudgetBalance  *float64          `json:"budget_balance"`
	Breaker        *breakerDoc       `json:"breaker,omitempty"`
	BulkheadInUse  int               `json:"bulkhead_in_use"`
	BulkheadLimit  int               `json:"bulkhead_limit"`
	BulkheadMode   string            `json:"bulkhead_mode,omitempty"`
	LimiterTokens  *float64          `json:"limiter_tokens,omitempty"`
	QuotaMode      string            `json:"quota_mode,omitempty"`
	Routes         []string          `json:"routes,omitempty"`
	Groups         map[string]string `json:"groups,omitempty"`
	Fault          any               `json:"fault,omitempty"`
	Calls          uint64            `json:"calls"`
	Failures       uint64            `json:"failures"`
	Rejections     uint64            `json:"rejections"`
	CoalesceJoined uint64            `json:"coalesce_joined"`
	HedgeDelay     *float64          `json:"hedge_delay_seconds,omitempty"`
	NonDefault     []configKeyDoc    `json:"non_default,omitempty"`
	Config         map[string]any    `json:"config,omitempty"`
}

func statusDocOf(s Status) statusDoc {
	d := statusDoc{Generation: s.Generation, LastReload: s.LastReload, Clients: make([]clientDoc, len(s.Clients)), Sources: s.Sources}
	if s.LastError != nil {
		d.LastError = middleware.RedactText(s.LastError.Error())
	}
	for i, c := range s.Clients {
		d.Clients[i] = clientDocOf(c)
	}
	d.Reloads = make([]reloadDoc, len(s.Reloads))
	for i, rec := range s.Reloads {
		rd := reloadDoc{Time: rec.Time, Generation: rec.Generation, Result: "applied", Changed: rec.Changed}
		if rec.Err != nil {
			rd.Result, rd.Error = "rejected", middleware.RedactText(rec.Err.Error())
		}
		if rd.Changed == nil {
			rd.Changed = []string{}
		}
		d.Reloads[i] = rd
	}
	return d
}

func clientDocOf(c ClientStatus) clientDoc {
	d := clientDoc{
		Name: c.Name, Defined: c.Defined, ConfigHash: c.ConfigHash, Generation: c.Generation,
		BudgetBalance: finite(c.BudgetBalance), Breaker: breakerDocOf(c),
		BulkheadInUse: c.BulkheadInUse, BulkheadLimit: c.BulkheadLimit, BulkheadMode: c.BulkheadMode,
		LimiterTokens: c.LimiterTokens, QuotaMode: c.QuotaMode, Routes: c.Routes, Groups: c.Groups,
		Calls: c.Calls, Failures: c.Failures, Rejections: c.Rejections, CoalesceJoined: c.CoalesceJoined,
	}
	if c.Config.Hedge.Enabled {
		secs := c.HedgeDelay.Seconds()
		d.HedgeDelay = &secs
	}
	for _, k := range c.NonDefault {
		kd := configKeyDoc{Key: k.Key, Value: k.Value, Default: k.Default}
		if k.Known {
			kd.Origin = &originDoc{Layer: k.Origin.Layer.String(), Name: k.Origin.Name, Line: k.Origin.Line, Path: k.Origin.Path}
		}
		d.NonDefault = append(d.NonDefault, kd)
	}
	return d
}

// finite returns &x, or nil for an infinity or NaN.
func finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

// MarshalJSON encodes s as Handler does, without the clients' configs:
// last_error is the redacted message, an infinite budget_balance is null.
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(statusDocOf(s)) }

// MarshalJSON encodes c as Handler does, without the config; an infinite
// budget_balance is null.
func (c ClientStatus) MarshalJSON() ([]byte, error) { return json.Marshal(clientDocOf(c)) }

// configDoc returns c, a ClientStatus.Config whose secrets Status already
// redacted (shownConfig), as a tree keyed like the file (the koanf tags).
func configDoc(c config.ClientConfig) map[string]any {
	m := settingsDoc(c)
	headers := c.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	m["headers"] = headers
	return m
}

// settingsDoc nests c.Settings() (secrets already redacted) into a tree
// keyed like the file; the headers and routes are left to configDoc, and a
// float that JSON cannot hold reads null.
func settingsDoc(c config.ClientConfig) map[string]any {
	out := map[string]any{}
	for _, s := range c.Settings() {
		if s.Key == "headers" || strings.HasPrefix(s.Key, "headers.") || strings.HasPrefix(s.Key, "routes.") {
			continue
		}
		v := s.Value
		if x, ok := v.(float64); ok {
			v = finite(x)
		}
		m, segs := out, strings.Split(s.Key, ".")
		for _, seg := range segs[:len(segs)-1] {
			next, ok := m[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[seg] = next
			}
			m = next
		}
		m[segs[len(segs)-1]] = v
	}
	return out
}
