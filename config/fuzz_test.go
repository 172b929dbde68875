package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/cosid-go/store/config"
)

var fuzzSeeds = []string{
	`{"stores": {"a": {"type": "configtest", "timeout": "5s", "options": {"retry": {"maxRetries": 7}, "flag": true}}}}`,
	`{"stores": {"a": {"type": "configtest"}, "a": {"type": "memory"}}}`,
	`{"stores": {"a": {"type": "configtest", "options": {"path": "a.db", "path": "b.db"}}}}`,
	`{"stores": {"a": {"type": "configtest", "options": {"retry": {"maxRetries": 1}, "retry.maxRetries": 5}}}}`,
	`{"cosid": {"stores": {"a": {"type": "configtest", "timeout": 99999999999999999}}}} {}`,
	`{"stores": {"a": {"type": "configtest", "timeout": "soon"}}}`,
	"stores: {a: {type: configtest}}\n---\nstores: {}\n",
	"base: &b {path: a.db}\nstores: {a: {type: configtest, options: {<<: *b, path: b.db}}}\n",
	"stores:\n  a:\n    type: configtest\n    timeout: 1e3\n",
	`{"stores": {"\u0061": {"type": "x"}, "a": {"type": "y"}}}`,
	"a: &a [x, *a]\nstores: {b: {<<: *a}}\n", // found by the fuzzer: a merge of itself overflowed the stack
}

// FuzzParseJSON and FuzzParseYAML: a refused document yields no Config and
// an error that starts with "config:" and quotes only names and values the
// document holds (or, for a syntax error, says where); an accepted JSON
// document holds no key twice (encoding/json, which keeps the last one,
// finds the same stores).
func FuzzParseJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := config.ParseJSON([]byte(doc))
		if err != nil {
			checkRefusal(t, doc, c, err, jsonScalars(doc))
			return
		}
		if !json.Valid([]byte(doc)) {
			t.Fatalf("%q: accepted, but it is not one valid JSON document", doc)
		}
		var plain struct {
			Stores map[string]json.RawMessage
			Cosid  struct{ Stores map[string]json.RawMessage }
		}
		if err := json.Unmarshal([]byte(doc), &plain); err == nil {
			n := len(plain.Stores) + len(plain.Cosid.Stores)
			if n != len(c.Stores) {
				t.Fatalf("%q: %d stores parsed, encoding/json sees %d", doc, len(c.Stores), n)
			}
		}
	})
}

func FuzzParseYAML(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := config.ParseYAML([]byte(doc))
		if err != nil {
			checkRefusal(t, doc, c, err, yamlScalars(doc))
			return
		}
		for name, sc := range c.Stores {
			if name == "" || sc.Type == "" || sc.Options == nil {
				t.Fatalf("%q: accepted store %q as %+v", doc, name, sc)
			}
		}
	})
}

func checkRefusal(t *testing.T, doc string, c *config.Config, err error, scalars map[string]bool) {
	t.Helper()
	msg := err.Error()
	if c != nil || !strings.HasPrefix(msg, "config: ") {
		t.Fatalf("%q: refused with %v but returned %v", doc, err, c)
	}
	if strings.HasPrefix(msg, "config: JSON: ") || strings.HasPrefix(msg, "config: YAML: ") || scalars == nil {
		return // a syntax error, placed by byte or line
	}
	for rest := msg; ; {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			return
		}
		q, err := strconv.QuotedPrefix(rest[i:])
		if err != nil {
			t.Fatalf("%q: error %q has an unbalanced quote", doc, msg)
		}
		rest = rest[i+len(q):]
		s, _ := strconv.Unquote(q)
		if !dotted(s, scalars) {
			t.Fatalf("%q: error %q quotes %s, which the document does not hold", doc, msg, q)
		}
	}
}

// dotted reports whether s is a scalar of the document, or scalars joined
// with dots (a path of keys).
func dotted(s string, scalars map[string]bool) bool {
	if scalars[s] {
		return true
	}
	for i := range len(s) {
		if s[i] == '.' && scalars[s[:i]] && dotted(s[i+1:], scalars) {
			return true
		}
	}
	return false
}

// jsonScalars returns every string and number of doc, or nil if doc is no
// JSON at all.
func jsonScalars(doc string) map[string]bool {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	out := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch v := tok.(type) {
		case string:
			out[v] = true
		case json.Number:
			out[v.String()] = true
		case bool, nil:
			out[fmt.Sprint(v)] = true
		}
	}
}

// yamlScalars returns every scalar of doc's documents, as written and as
// decoded, or nil if doc does not parse.
func yamlScalars(doc string) map[string]bool {
	out := map[string]bool{}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(doc)))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return out
		}
		var walk func(*yaml.Node)
		walk = func(n *yaml.Node) {
			if n.Kind == yaml.ScalarNode {
				out[n.Value] = true
				var v any
				if n.Decode(&v) == nil {
					out[fmt.Sprint(v)] = true
				}
			}
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(&n)
	}
}
