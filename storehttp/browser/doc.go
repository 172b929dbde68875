// Package browser tests the status page of package storehttp in a real
// browser: headless Chromium (Debian's chromium package, installed by
// scripts/install-chromium.sh), driven through the DevTools protocol by
// chromedp. It is a module of its own so that chromedp stays out of the
// store's module, whose users would otherwise download it with every
// build list; it holds tests only.
//
// STOREHTTP_SCREENSHOT=path writes the screenshot of the page that the
// README and docs/observability.md show (two generators and a held lock)
// while the tests run.
// A failing browser check writes a screenshot of the page next to the
// test's temporary files and logs its path.
package browser
