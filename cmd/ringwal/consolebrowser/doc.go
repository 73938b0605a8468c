// Package consolebrowser holds the admin console's tests in a real browser:
// headless Chromium driven by chromedp against the console over an engine.
// They live in the cmd/ringwal module so that the engine's module does not
// list chromedp among its requirements. The package has no code of its own.
package consolebrowser
