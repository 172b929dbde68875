package postgres

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/cosid-go/store/driver"
)

// sslModes are the sslmode values pgx accepts.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// fieldReason says why the value of a connection field that carries no
// secret (host, port, sslmode) is refused, or "" when it is not or when the
// field is another one. pgx only says that the whole string did not parse.
func fieldReason(keyword, v string) string {
	switch keyword {
	case "host":
		for h := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(h) == "" {
				return "an empty host"
			}
		}
	case "port":
		for p := range strings.SplitSeq(v, ",") {
			if _, err := driver.ParseInt(p, 1, 65535); err != nil && p == v {
				return err.Error()
			} else if err != nil {
				return fmt.Sprintf("port %q of the list: %v", p, err)
			}
		}
	case "sslmode":
		if !slices.Contains(sslModes, v) {
			return "not one of " + strings.Join(sslModes, ", ")
		}
	}
	return ""
}

// checkFields refuses a separate field option that is set but empty (it
// would silently mean the default) or whose value cannot work.
func checkFields(given map[string]string) error {
	for _, f := range fieldNames {
		v, ok := given[f.option]
		if !ok {
			continue
		}
		why := fieldReason(f.keyword, v)
		if v == "" {
			why = "empty; leave the option out for the default"
		}
		if why != "" {
			return &driver.OptionError{Key: f.option, Value: v, Secret: f.option == "password", Reason: why}
		}
	}
	return nil
}

// explainConnString finds a field of connString that carries no secret and
// explains why pgx refused it ("" when none is to blame). The string itself
// is never shown: it may hold a password. The port of a URL is left out: in
// a malformed URL its place may hold part of a password.
func explainConnString(connString string) string {
	if u, err := url.Parse(connString); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if v := u.Query().Get("sslmode"); u.Query().Has("sslmode") && fieldReason("sslmode", v) != "" {
			return fmt.Sprintf("its sslmode %q: %s", v, fieldReason("sslmode", v))
		}
		return ""
	}
	for _, kv := range keywordPairs(connString) {
		if kv[0] == "host" && kv[1] == "" {
			continue // libpq's default host
		}
		if why := fieldReason(kv[0], kv[1]); why != "" {
			return fmt.Sprintf("its %s %q: %s", kv[0], kv[1], why)
		}
	}
	return ""
}

// keywordPairs splits a libpq keyword/value string: key=value pairs
// separated by spaces, a value either 'quoted' or bare, with \ escaping the
// next character. It is lenient: a malformed tail ends the list.
func keywordPairs(s string) [][2]string {
	var out [][2]string
	for {
		s = strings.TrimLeft(s, " \t\n\r\f\v")
		key, rest, ok := strings.Cut(s, "=")
		if !ok {
			return out
		}
		key = strings.TrimSpace(key)
		rest = strings.TrimLeft(rest, " \t\n\r\f\v")
		var v strings.Builder
		quoted := strings.HasPrefix(rest, "'")
		if quoted {
			rest = rest[1:]
		}
		i := 0
		for ; i < len(rest); i++ {
			c := rest[i]
			if c == '\\' && i+1 < len(rest) {
				i++
				v.WriteByte(rest[i])
				continue
			}
			if quoted && c == '\'' || !quoted && strings.ContainsRune(" \t\n\r\f\v", rune(c)) {
				break
			}
			v.WriteByte(c)
		}
		out = append(out, [2]string{key, v.String()})
		if i >= len(rest) {
			return out
		}
		s = rest[i+1:]
	}
}
