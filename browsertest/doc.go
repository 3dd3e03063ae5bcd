// Package browsertest checks switchboard's status page (the HTML that
// factory.Registry.Handler serves to browsers) in a real headless
// Chromium, driven over the DevTools protocol by
// github.com/chromedp/chromedp: the page loads with no console error and
// no failed request, shows every client, turns a breaker's badge open
// within 2 s of the breaker opening without a page reload, shows a
// rejected reload's error, and holds no configured secret in its DOM.
//
// It is a nested module so that the main module gains no dependency on
// chromedp. The test needs the chromium binary on PATH (Debian's chromium
// package; .ci/run installs it) and fails without it. With
// SWITCHBOARD_SCREENSHOT set to a file name it writes its screenshot there
// (docs/status-page.png is made so):
//
//	cd browsertest && SWITCHBOARD_SCREENSHOT=../docs/status-page.png go test ./...
//
// The package has no code of its own: only the test.
package browsertest
