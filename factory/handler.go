package factory

import (
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// Handler returns an http.Handler for an ops endpoint that serves the
// registry's status as JSON (GET or HEAD; other methods get 405):
// Status's fields, last_error as a redacted string, and for each client
// its effective configuration under "config", keys named as in the file.
// Secrets never appear: values of keys tagged secret:"true"
// (auth.bearer_token, auth.basic.password) read "REDACTED" when set,
// values of headers whose name is sensitive (middleware.IsSensitiveHeader)
// too, and transport.proxy_url loses its userinfo. Names of secret files
// are shown. Durations are Go duration strings; a budget that is off has a
// budget_balance of null (JSON has no infinity).
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
}

// clientDoc is the JSON form of ClientStatus, with non-finite numbers as
// null and, in Handler, the effective config.
type clientDoc struct {
	Name          string             `json:"name"`
	Defined       bool               `json:"defined"`
	ConfigHash    string             `json:"config_hash"`
	Generation    uint64             `json:"generation"`
	BudgetBalance *float64           `json:"budget_balance"`
	Breaker       map[string]string  `json:"breaker,omitempty"`
	RejectP       map[string]float64 `json:"breaker_reject_probability,omitempty"`
	BulkheadInUse int                `json:"bulkhead_in_use"`
	BulkheadLimit int                `json:"bulkhead_limit"`
	LimiterTokens *float64           `json:"limiter_tokens,omitempty"`
	Groups        map[string]string  `json:"groups,omitempty"`
	Fault         any                `json:"fault,omitempty"`
	Config        map[string]any     `json:"config,omitempty"`
}

func statusDocOf(s Status) statusDoc {
	d := statusDoc{Generation: s.Generation, LastReload: s.LastReload, Clients: make([]clientDoc, len(s.Clients)), Sources: s.Sources}
	if s.LastError != nil {
		d.LastError = middleware.RedactText(s.LastError.Error())
	}
	for i, c := range s.Clients {
		d.Clients[i] = clientDocOf(c)
	}
	return d
}

func clientDocOf(c ClientStatus) clientDoc {
	return clientDoc{
		Name: c.Name, Defined: c.Defined, ConfigHash: c.ConfigHash, Generation: c.Generation,
		BudgetBalance: finite(c.BudgetBalance), Breaker: c.Breaker, RejectP: c.BreakerRejectProbability,
		BulkheadInUse: c.BulkheadInUse, BulkheadLimit: c.BulkheadLimit,
		LimiterTokens: c.LimiterTokens, Groups: c.Groups,
	}
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

var durationType = reflect.TypeFor[time.Duration]()

// configDoc returns c as a tree keyed like the file (the koanf tags), with
// secrets redacted (see Handler).
func configDoc(c config.ClientConfig) map[string]any {
	m := structDoc(reflect.ValueOf(c))
	headers := make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		if middleware.IsSensitiveHeader(k) && v != "" {
			v = middleware.Redacted
		}
		headers[k] = v
	}
	m["headers"] = headers
	if t, ok := m["transport"].(map[string]any); ok && c.Transport.ProxyURL != "" {
		t["proxy_url"] = middleware.RedactURLString(c.Transport.ProxyURL)
	}
	return m
}

// structDoc converts a settings struct: durations to strings, nested
// structs to maps, secret:"true" strings to Redacted when set.
func structDoc(v reflect.Value) map[string]any {
	t := v.Type()
	out := make(map[string]any, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		switch {
		case f.Tag.Get("secret") == "true":
			s := ""
			if !fv.IsZero() {
				s = middleware.Redacted
			}
			out[name] = s
		case f.Type == durationType:
			out[name] = time.Duration(fv.Int()).String()
		case f.Type.Kind() == reflect.Struct:
			out[name] = structDoc(fv)
		case f.Type.Kind() == reflect.Float32 || f.Type.Kind() == reflect.Float64:
			out[name] = finite(fv.Float())
		default:
			out[name] = fv.Interface()
		}
	}
	return out
}
