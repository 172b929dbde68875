package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cosid-go/store/driver"
)

// String describes the store with every option value that can carry a
// secret hidden (driver.Redact): "zookeeper timeout=3s auth=*** root=/cosid".
func (sc StoreConfig) String() string {
	var b strings.Builder
	b.WriteString(sc.Type)
	if sc.Timeout > 0 {
		fmt.Fprintf(&b, " timeout=%v", sc.Timeout)
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Options)) {
		b.WriteString(" ")
		b.WriteString(driver.Redact(k + "=" + sc.Options[k]))
	}
	return b.String()
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q), so that no
// verb prints the options as given.
func (sc StoreConfig) Format(f fmt.State, verb rune) { writeFormatted(f, verb, sc.String()) }

// String describes every store, by name, as StoreConfig.String does.
func (c Config) String() string {
	parts := make([]string, 0, len(c.Stores))
	for _, name := range slices.Sorted(maps.Keys(c.Stores)) {
		parts = append(parts, fmt.Sprintf("%s: %s", name, c.Stores[name].String()))
	}
	return "stores{" + strings.Join(parts, "; ") + "}"
}

// Format prints String for every verb.
func (c Config) Format(f fmt.State, verb rune) { writeFormatted(f, verb, c.String()) }

func writeFormatted(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s)
		return
	}
	fmt.Fprint(f, s)
}
