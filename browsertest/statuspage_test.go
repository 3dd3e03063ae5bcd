package browsertest_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/factory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The configured secrets: none may reach the page.
var secrets = []string{"tok-SECRET-1", "hdr-SECRET-2", "pw-SECRET-3", "proxy-SECRET-4", "proxyuser"}

// clientsYAML is the registry the page shows; %s is the backend's host.
const clientsYAML = `defaults:
  timeout: 5s
  headers: {User-Agent: checkout-svc/2.3}
clients:
  billing:
    retry: {max_retries: 0}
    circuit_breaker: {enabled: true, failure_threshold: 2, cooldown: 30s}
    bulkhead: {max_concurrent: 8}
    auth: {host: "%[1]s", bearer_token: tok-SECRET-1}
    headers: {X-Api-Key: hdr-SECRET-2}
  inventory:
    hedge: {enabled: true, delay: 150ms}
    rate_limit: {requests_per_second: 200, burst: 50, group: edge}
    circuit_breaker: {enabled: true, mode: adaptive, window: 30s}
    auth: {host: inventory.internal, basic: {username: svc, password: pw-SECRET-3}}
  search:
    rate_limit: {requests_per_second: 200, burst: 50, group: edge}
    fault: {enabled: true, abort: {percent: 1, status: 503}, header: X-Game-Day}
  reports:
    transport: {proxy_url: "http://proxyuser:proxy-SECRET-4@proxy.internal:3128"}
    bulkhead: {mode: adaptive, min_limit: 1, max_limit: 50, initial_limit: 12}
    coalesce: {enabled: true}
`

// backend answers 200, but 500 on /billing while failing is set and 500
// to every fourth call on /inventory.
type backend struct {
	failing atomic.Bool
	n       atomic.Int64
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/billing" && b.failing.Load():
		w.WriteHeader(http.StatusInternalServerError)
	case r.URL.Path == "/inventory" && b.n.Add(1)%4 == 0:
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// pageEvents collects what must not happen while the page runs: console
// errors, uncaught exceptions, log entries at error level (a CSP
// violation is one), failed requests and answers >= 400.
type pageEvents struct {
	mu   sync.Mutex
	bad  []string
	reqs int
}

func (p *pageEvents) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bad = append(p.bad, fmt.Sprintf(format, args...))
}

func (p *pageEvents) listen(ev any) {
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value))
			}
			p.add("console.%s: %s", e.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		p.add("exception: %s at %s:%d", e.ExceptionDetails.Text, e.ExceptionDetails.URL, e.ExceptionDetails.LineNumber)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			p.add("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventLoadingFailed:
		if !e.Canceled { // a poll cut short by the test's end is not a failure
			p.add("request failed: %s %s", e.Type, e.ErrorText)
		}
	case *network.EventResponseReceived:
		p.mu.Lock()
		p.reqs++
		p.mu.Unlock()
		if e.Response.Status >= 400 {
			p.add("answer %d for %s", e.Response.Status, e.Response.URL)
		}
	}
}

func (p *pageEvents) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.bad {
		t.Error(b)
	}
	if p.reqs < 4 { // the page, its script, style and icon, then polls
		t.Errorf("saw %d answers, want the page, its assets and its polls", p.reqs)
	}
}

func TestStatusPageInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (apt-get install -y chromium): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	be := &backend{}
	api := httptest.NewServer(be)
	defer api.Close()
	apiURL, _ := url.Parse(api.URL)
	file := filepath.Join(t.TempDir(), "clients.yaml")
	write := func(yaml string) {
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf(clientsYAML, apiURL.Host))
	reg, err := factory.Open(ctx, factory.Options{File: file, NoWatch: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	call := func(client string, n int) {
		for range n {
			resp, err := reg.Get(client).Get(api.URL + "/" + client)
			if err == nil {
				resp.Body.Close()
			}
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/switchboard", reg.Handler())
	ops := httptest.NewServer(mux)
	defer ops.Close()

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // root in a container has no user namespace for the sandbox
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1024),
	)...)
	defer cancelAlloc()
	events := &pageEvents{}
	// The listener is there from the tab's start: it sees every event of
	// the page (chromedp enables the runtime, log and network domains).
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithListener(events.listen))
	defer cancelBrowser()
	// eval returns the value of a JavaScript expression in the page.
	eval := func(expr string) (any, error) { return chromedp.Run(bctx, chromedp.Evaluate[any](expr)) }
	// waitFor waits up to within for a JavaScript predicate to hold.
	waitFor := func(predicate string, within time.Duration) error {
		_, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](predicate,
			chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(20*time.Millisecond)))
		return err
	}
	text := func(sel string) (string, error) { return chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel))) }

	// waitPolls waits until the page has drawn n more polls.
	waitPolls := func(n int) {
		t.Helper()
		for range n {
			before, err := eval(`document.body.dataset.updated || ""`)
			if err != nil {
				t.Fatal(err)
			}
			if err := waitFor(fmt.Sprintf(`(document.body.dataset.updated || "") !== %q`, before), 5*time.Second); err != nil {
				t.Fatalf("the page stopped polling: %v", err)
			}
		}
	}

	call("inventory", 12)
	call("search", 6)
	start := time.Now()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(ops.URL+"/debug/switchboard"),
		chromedp.WaitVisible(chromedp.CSS(`[data-client="search"]`)),
	); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	if _, err := eval(`window.loadedOnce = "yes"`); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	t.Logf("page loaded with every tile in %v", time.Since(start))

	// Every client's tile, and the shared rate limit's.
	for _, sel := range []string{`[data-client="billing"]`, `[data-client="inventory"]`, `[data-client="reports"]`, `[data-client="search"]`, `[data-group="rate_limit:edge"]`} {
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		if err != nil || n != 1 {
			t.Errorf("tiles matching %s: got %d (%v), want 1", sel, n, err)
		}
	}
	if got, err := text(`[data-client="search"] .fault`); err != nil || !strings.Contains(got, "fault") {
		t.Errorf("search's fault badge: got %q (%v)", got, err)
	}
	if got, err := text(`[data-client="reports"] .facts`); err != nil || !strings.Contains(got, "0 / 12 in use (adaptive limit)") {
		t.Errorf("reports' adaptive bulkhead: got %q (%v), want 0 / 12 in use (adaptive limit)", got, err)
	}
	if got, err := text(`[data-client="billing"] .breaker`); err != nil || !strings.Contains(got, "closed") {
		t.Fatalf("billing's breaker badge before: got %q (%v), want closed", got, err)
	}
	// Coalescing on shows its count; off, no line.
	if got, err := text(`[data-client="reports"] .facts`); err != nil || !strings.Contains(got, "0 joined a call in flight") {
		t.Errorf("reports' facts: got %q (%v), want the coalesced count", got, err)
	}
	if got, err := text(`[data-client="billing"] .facts`); err != nil || strings.Contains(got, "coalesced") {
		t.Errorf("billing's facts: got %q (%v), want no coalesced line", got, err)
	}

	// A failing backend opens billing's breaker: its badge turns open
	// within 2 s, without a reload of the page.
	be.failing.Store(true)
	call("billing", 2)
	opened := time.Now()
	if err := waitFor(`document.querySelector('[data-client="billing"] .breaker').dataset.state === "open"`, 2*time.Second); err != nil {
		t.Fatalf("billing's badge did not turn open within 2s: %v", err)
	}
	t.Logf("badge open %v after the breaker opened", time.Since(opened))
	if got, err := text(`[data-client="billing"] .breaker`); err != nil || !strings.Contains(got, "probe in") {
		t.Errorf("the open badge: got %q (%v), want the time to the next probe", got, err)
	}
	call("billing", 3) // rejected by the open breaker
	be.failing.Store(false)

	// A rejected reload shows its error, in red at the top and in the
	// list of reloads.
	write(strings.Replace(fmt.Sprintf(clientsYAML, apiURL.Host), "max_retries: 0", "max_retries: -1", 1))
	if err := reg.Reload(); err == nil {
		t.Fatal("the reload of a bad file was applied")
	}
	shown := time.Now()
	if err := waitFor(`document.getElementById("last-error").textContent.includes("max_retries")
		&& !document.getElementById("last-error").hidden
		&& document.querySelector('#reloads tr[data-result="rejected"] td.err').textContent.includes("max_retries")`, 2*time.Second); err != nil {
		t.Fatalf("the rejected reload's error is not shown within 2s: %v", err)
	}
	t.Logf("rejected reload shown %v after it", time.Since(shown))
	if marker, err := eval(`window.loadedOnce || "reloaded"`); err != nil || marker != "yes" {
		t.Fatalf("the page was reloaded (marker %q, %v); it must update in place", marker, err)
	}

	// Some traffic over a few polls, so the sparklines draw, then billing's
	// config opened for the screenshot.
	for range 4 {
		call("inventory", 16)
		call("search", 8)
		waitPolls(1)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`[data-client="billing"] details.config > summary`))); err != nil {
		t.Fatal(err)
	}
	waitPolls(1) // the open details survive a redraw
	if open, err := eval(`document.querySelector('[data-client="billing"] details.config').open`); err != nil || open != true {
		t.Errorf("billing's config details closed by a redraw (%v)", err)
	}
	if got, err := text(`[data-client="billing"] details.config table`); err != nil ||
		!strings.Contains(got, "circuit_breaker.failure_threshold") || !strings.Contains(got, "file clients.yaml:7") {
		t.Errorf("billing's non-default keys with provenance: got %q (%v), want circuit_breaker.failure_threshold from file clients.yaml:7", got, err)
	}

	// No secret anywhere in the DOM, attributes and script included.
	html, err := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(html, s) {
			t.Errorf("the DOM holds the secret %q", s)
		}
	}
	if !strings.Contains(html, "REDACTED") {
		t.Errorf("the DOM shows no REDACTED value: the secrets' keys should show, their values not")
	}

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 1000 {
		t.Fatalf("screenshot: %v, %v; want a PNG at least 1000 px wide", err, img)
	}
	out := os.Getenv("SWITCHBOARD_SCREENSHOT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "status-page.png")
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s: %dx%d, %d bytes", out, img.Bounds().Dx(), img.Bounds().Dy(), len(shot))

	events.check(t)
	// Close the browser before the servers: its polls end first.
	cancelBrowser()
	cancelAlloc()
}
