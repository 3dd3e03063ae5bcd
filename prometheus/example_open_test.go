package promswitchboard_test

import (
	"context"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-http/switchboard/factory"
	promswitchboard "github.com/switchboard-http/switchboard/prometheus"
)

// Example_open wires both collectors into a registry opened from a file,
// as a service does, beside the status page on one internal listener.
// docs/observability.md shows these lines. Compiled, not run: there is no
// clients.yaml here.
func Example_open() {
	m := promswitchboard.NewMetrics(promswitchboard.Options{})
	opts := factory.Options{File: "clients.yaml", EnvPrefix: "SWITCHBOARD_"}
	m.Instrument(&opts) // before Open: the Observer and each client's middleware
	clients, err := factory.Open(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
	prometheus.MustRegister(m, promswitchboard.NewCollector(clients, promswitchboard.Options{}))

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	// The status page, and its JSON for tools, beside the metrics.
	mux.Handle("/debug/switchboard", clients.Handler())
	log.Print(http.ListenAndServe("127.0.0.1:9090", mux)) // an internal address only
}
