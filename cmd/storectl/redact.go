package main

import (
	"strings"

	"github.com/cosid-go/store/driver"
)

// redact is driver.Redact, and it also hides a URL password holding '/',
// '?' or '#' unencoded: pgx connects with postgres://u:p#ss@db/ids, while
// driver.Redact ends the userinfo at the '#' and shows the password. Here
// a URL's userinfo runs to the last '@' before the next space or quote;
// that may hide more than a password (an '@' in a query), never less.
func redact(text string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, "://")
		if i < 0 {
			b.WriteString(text)
			break
		}
		start := i + 3
		end := start + strings.IndexAny(text[start:]+" ", " \t\n'\"`")
		token := text[start:end]
		b.WriteString(text[:start])
		if at := strings.LastIndexByte(token, '@'); at >= 0 {
			if user, _, ok := strings.Cut(token[:at], ":"); ok {
				token = user + ":***" + token[at:]
			}
		}
		b.WriteString(token)
		text = text[end:]
	}
	return driver.Redact(b.String())
}
