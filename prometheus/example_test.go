package promswitchboard_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	promswitchboard "github.com/switchboard-http/switchboard/prometheus"
)

// Example wires both collectors into a registry, makes one call to an
// in-process server, scrapes /metrics and prints a few of its lines.
func Example() {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()

	m := promswitchboard.NewMetrics(promswitchboard.Options{})
	opts := factory.Options{}
	m.Instrument(&opts) // before New or Open: the Observer and each client's middleware
	clients, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
	preg := prometheus.NewRegistry()
	preg.MustRegister(m, promswitchboard.NewCollector(clients, promswitchboard.Options{}))
	metrics := httptest.NewServer(promhttp.HandlerFor(preg, promhttp.HandlerOpts{}))
	defer metrics.Close()

	resp, err := clients.Get("billing").Get(backend.URL + "/v1/invoices")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()

	resp, err = http.Get(metrics.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, `switchboard_calls_total{client="billing",outcome="success"}`) ||
			strings.HasPrefix(line, "switchboard_config_generation ") ||
			strings.HasPrefix(line, `switchboard_retry_budget_balance`) {
			fmt.Println(line)
		}
	}
	// Output:
	// switchboard_calls_total{client="billing",outcome="success"} 1
	// switchboard_config_generation 1
	// switchboard_retry_budget_balance{client="billing"} 100.2
}
