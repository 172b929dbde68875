package driver

import (
	"regexp"
	"strings"
)

// Redact returns text with every secret it recognises replaced by ***, for
// messages, logs and tools' output. It knows three forms:
//
//   - the password of a URL's userinfo:
//     postgres://ids:***@db/ids (the user stays);
//   - the value of a key=value pair whose key looks secret (password,
//     passwd, pwd, secret, token, credential, auth, apikey, in any case and
//     inside longer keys: sslpassword, tls.keyPassword): a quoted value
//     ('...' or "...", with backslash escapes) or one running to a space,
//     '&' or ';', and across commas while the next piece has no '=' (an
//     auth list, digest:a:x,digest:b:y, is one value): password=***,
//     auth=***;
//   - the password of a ZooKeeper digest credential: digest:alice:***;
//   - the password of a MySQL DSN (go-sql-driver/mysql's form), up to the
//     last '@' before its protocol or database: ids:***@tcp(db:3306)/ids;
//   - PEM data (a key pasted where a file's path was expected), from its
//     -----BEGIN line to its -----END line or the end of text:
//     (PEM data not shown).
//
// An option is shown as Redact(key + "=" + value). Text that is not one of
// these forms is kept as it is: a secret given without a key (a bare
// password where a host was expected) is not recognised.
func Redact(text string) string {
	text = hidePEM(text)
	text = redactURLs(text)
	text = redactPairs(text)
	text = mysqlDSN.ReplaceAllString(text, "${1}***${2}")
	return digestCred.ReplaceAllString(text, "${1}***")
}

// secretKey matches a key that looks secret, followed by '='.
var secretKey = regexp.MustCompile(`(?i)[a-z0-9_.\-]*(?:passw(?:or)?d|pwd|secret|token|credential|auth|api_?key)[a-z0-9_.\-]*\s*=\s*`)

// pemBlock is PEM data, ended or cut short (the END line may be missing in
// a pasted or quoted value).
var pemBlock = regexp.MustCompile(`-----BEGIN[^-]*-----(?s:.*?)(?:-----END[^-]*-----|$)`)

func hidePEM(text string) string { return pemBlock.ReplaceAllString(text, "(PEM data not shown)") }

// mysqlDSN is a MySQL DSN's user:password@ before tcp(, unix(, or the
// slash of the database; the password may hold '@' and ':'.
var mysqlDSN = regexp.MustCompile(`((?:^|[\s'"=(])[^\s:@'"/()]*:)\S*?(@(?:tcp6?\(|unix\(|/)\S*)`)

// digestCred is a ZooKeeper digest scheme's user:password.
var digestCred = regexp.MustCompile(`(\bdigest:[^:\s,'"]+:)[^\s,'"]+`)

// redactURLs hides the password of every scheme://user:password@ in text.
// The userinfo runs to the last '@' before the next space or quote: pgx
// connects with a password holding '/', '?' or '#' unencoded
// (postgres://u:p#ss@db/ids), so the authority cannot end at them. This
// may hide more than a password (an '@' in a query), never less.
func redactURLs(text string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, "://")
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		start := i + 3
		end := start + strings.IndexAny(text[start:]+" ", " \t\n'\"`")
		token := text[start:end]
		b.WriteString(text[:start])
		if at := strings.LastIndexByte(token, '@'); at >= 0 {
			if user, _, ok := strings.Cut(token[:at], ":"); ok {
				token = user + ":***" + token[at:]
			}
		} else if user, _, ok := strings.Cut(token, ":"); ok {
			// No '@' before a space or quote, yet "user:": the password may
			// hold one (u:pa ss@db). Hide up to the '@' that ends it, on
			// the same line and before another URL.
			if n := userinfoEnd(text[start:]); n > 0 {
				token, end = user+":***", start+n
			}
		}
		b.WriteString(token)
		text = text[end:]
	}
}

// userinfoEnd is the index in s (text after "://") of the '@' that ends a
// userinfo holding spaces or quotes: the last '@' of the run of non-space
// text that holds the first '@' of s's line before any other "://"; 0 if
// there is none.
func userinfoEnd(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[:i]
	}
	first := strings.IndexByte(s, '@')
	if first < 0 {
		return 0
	}
	run := s[first:]
	if i := strings.IndexAny(run, " \t'\"`"); i >= 0 {
		run = run[:i]
	}
	return first + strings.LastIndexByte(run, '@')
}

// redactPairs hides the value of every secret-looking key=value pair.
func redactPairs(text string) string {
	var b strings.Builder
	for {
		loc := secretKey.FindStringIndex(text)
		if loc == nil {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:loc[1]])
		b.WriteString("***")
		text = text[loc[1]+valueLen(text[loc[1]:]):]
	}
}

// valueLen is the length of the value at the start of s.
func valueLen(s string) int {
	if s == "" {
		return 0
	}
	if q := s[0]; q == '\'' || q == '"' {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case q:
				return i + 1
			}
		}
		return len(s)
	}
	n := 0
	for {
		end := strings.IndexAny(s[n:], " \t\n&;,")
		if end < 0 {
			return len(s)
		}
		n += end
		if s[n] != ',' {
			return n
		}
		// A piece after a comma continues the value unless it is a pair
		// of its own.
		next := s[n+1:]
		if stop := strings.IndexAny(next, " \t\n&;,"); stop >= 0 {
			next = next[:stop]
		}
		if strings.Contains(next, "=") {
			return n
		}
		n++
	}
}
