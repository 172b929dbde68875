package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFormatRedacts: no fmt verb prints an option value that can carry a
// secret, for a store, a config, or the map of stores.
func TestFormatRedacts(t *testing.T) {
	const secret = "Hunter2"
	sc := StoreConfig{Type: "postgres", Timeout: 3 * time.Second, Options: map[string]string{
		"connString": "postgres://ids:" + secret + "@db/ids",
		"password":   secret,
		"auth":       "digest:alice:" + secret,
		"schema":     "ids",
	}}
	c := &Config{Stores: map[string]StoreConfig{"pg": sc}}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		for _, v := range []any{sc, &sc, c, *c, c.Stores} {
			if out := fmt.Sprintf(f, v); strings.Contains(out, secret) {
				t.Errorf("Sprintf(%q) of %T = %q shows the secret", f, v, out)
			}
		}
	}
	want := "postgres timeout=3s auth=*** connString=postgres://ids:***@db/ids password=*** schema=ids"
	if got := sc.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := fmt.Sprint(c); got != "stores{pg: "+want+"}" {
		t.Errorf("Config = %q", got)
	}
}
