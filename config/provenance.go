package config

import (
	"maps"
	"slices"
	"strconv"
)

// provenance builds the Provenance of cfg from the origins of every key the
// layers set. A client key its own section did not set is attributed to the
// `defaults` key it inherited, with that key's Path.
func (st *loadState) provenance(cfg Config) *Provenance {
	p := &Provenance{
		Defaults: st.originsOf("defaults", "", cfg.Defaults),
		Clients:  make(map[string]map[string]Origin, len(cfg.Clients)),
	}
	for name, c := range cfg.Clients {
		own := st.originsOf("clients."+name, "defaults", c)
		for pattern, r := range c.Routes {
			// A route key the route did not set has the origin of the
			// client key it inherited (which may be a defaults key).
			rprefix := "clients." + name + ".routes." + strconv.Quote(pattern)
			rc := r.Client(ClientConfig{})
			for rel, o := range st.originsOf(rprefix, "", rc) {
				if routeAllowed(rel) {
					own[RouteKey(pattern, rel)] = o
				}
			}
			for _, f := range keyTable {
				rel := f.path
				keys := []string{rel}
				if f.kind == kindStringMap {
					keys = keys[:0]
					for _, h := range slices.Sorted(maps.Keys(rc.Headers)) {
						keys = append(keys, rel+"."+h)
					}
				}
				for _, k := range keys {
					if _, set := own[RouteKey(pattern, k)]; !set && routeAllowed(k) {
						if o, ok := own[k]; ok {
							own[RouteKey(pattern, k)] = o
						}
					}
				}
			}
		}
		p.Clients[name] = own
	}
	return p
}

// originsOf returns the origin of every effective key of c, which lives at
// prefix; keys not found there are looked up under fallback (when not "").
func (st *loadState) originsOf(prefix, fallback string, c ClientConfig) map[string]Origin {
	out := map[string]Origin{}
	add := func(rel string) {
		if o, ok := st.origins[prefix+"."+rel]; ok {
			out[rel] = o
			return
		}
		if fallback != "" {
			if o, ok := st.origins[fallback+"."+rel]; ok {
				out[rel] = o
			}
		}
	}
	for _, f := range keyTable {
		if f.kind != kindStringMap {
			add(f.path)
			continue
		}
		for _, h := range slices.Sorted(maps.Keys(c.Headers)) {
			add(f.path + "." + h)
		}
	}
	return out
}

// Default returns where key of the `defaults` section got its value; ok is
// false when the provenance does not know the key. Safe for concurrent use.
func (p *Provenance) Default(key string) (o Origin, ok bool) {
	if p == nil {
		return Origin{}, false
	}
	o, ok = p.Defaults[key]
	return o, ok
}
