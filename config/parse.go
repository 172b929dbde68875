package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cosid-go/store/driver"
)

// The rules both formats share: one document, nothing after it; no key
// given twice in one mapping (a YAML merge key counts as giving its keys);
// no option given twice through nested and dotted spellings. The last
// spelling of a duplicate silently winning is how a store ends up on
// another file or another server, starting again at 0.

// ParseYAML parses a YAML document.
func ParseYAML(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, fmt.Errorf("config: YAML: data after the document (a second document at line %d)", next.Line)
	case !errors.Is(err, io.EOF):
		return nil, yamlError(err)
	}
	if err := yamlDuplicates(&root, ""); err != nil {
		return nil, err
	}
	var doc any
	if root.Kind != 0 {
		if err := root.Decode(&doc); err != nil {
			return nil, yamlError(err)
		}
	}
	return build(doc)
}

// yamlError drops the library's own "yaml: " prefix, which would follow ours.
func yamlError(err error) error {
	return fmt.Errorf("config: YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// yamlDuplicates refuses a key given twice in any mapping under n; path is
// the dotted path of n, for the message.
func yamlDuplicates(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := yamlDuplicates(c, path); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		seen := map[string]bool{}
		add := func(k string) error {
			if seen[k] {
				return duplicate(path, k)
			}
			seen[k] = true
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				for _, m := range merged(v) {
					for j := 0; j+1 < len(m.Content); j += 2 {
						if err := add(m.Content[j].Value); err != nil {
							return err
						}
					}
				}
				continue
			}
			if err := add(k.Value); err != nil {
				return err
			}
			if err := yamlDuplicates(v, join(path, k.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

// merged returns the mappings a merge key's value brings in. An alias met
// again (a document that contains itself) is left for the decoder to refuse.
func merged(v *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	seen := map[*yaml.Node]bool{}
	var walk func(*yaml.Node)
	walk = func(v *yaml.Node) {
		for v.Kind == yaml.AliasNode && v.Alias != nil && !seen[v] {
			seen[v] = true
			v = v.Alias
		}
		switch v.Kind {
		case yaml.MappingNode:
			out = append(out, v)
		case yaml.SequenceNode:
			if seen[v] {
				return
			}
			seen[v] = true
			for _, c := range v.Content {
				walk(c)
			}
		}
	}
	walk(v)
	return out
}

// ParseJSON parses a JSON document.
func ParseJSON(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	doc, err := jsonValue(dec, "", 0)
	if err == nil {
		end := dec.InputOffset()
		if _, eof := dec.Token(); !errors.Is(eof, io.EOF) {
			return nil, fmt.Errorf("config: JSON: data after the document (which ends at byte %d)", end)
		}
	}
	var dup *duplicateError
	switch {
	case err == nil:
		return build(doc)
	case errors.As(err, &dup):
		return nil, err
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return nil, fmt.Errorf("config: JSON: %v (at byte %d)", err, se.Offset)
	}
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: JSON: the document ends early (at byte %d)", dec.InputOffset())
	}
	return nil, fmt.Errorf("config: JSON: %v", err)
}

// maxDepth bounds how deeply a JSON document nests (ours nest 5 levels).
const maxDepth = 64

// jsonValue reads one value token by token, refusing a key given twice in
// an object (encoding/json would keep the last one silently).
func jsonValue(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels (at byte %d)", maxDepth, dec.InputOffset())
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string) // the decoder allows only strings as keys
			if _, dup := m[k]; dup {
				return nil, duplicate(path, k)
			}
			if m[k], err = jsonValue(dec, join(path, k), depth+1); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token() // '}'
		return m, err
	case json.Delim('['):
		l := []any{}
		for dec.More() {
			v, err := jsonValue(dec, path, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err := dec.Token() // ']'
		return l, err
	}
	return tok, nil // a string, json.Number, bool or nil
}

// duplicateError is a key given twice in one mapping.
type duplicateError struct{ key string }

func (e *duplicateError) Error() string {
	return fmt.Sprintf("config: %q is given twice", e.key)
}

func duplicate(path, key string) error { return &duplicateError{join(path, key)} }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Load reads a file, as JSON if its name ends in .json and as YAML otherwise.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var c *Config
	if strings.EqualFold(filepath.Ext(path), ".json") {
		c, err = ParseJSON(data)
	} else {
		c, err = ParseYAML(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, nil
}

// build reads the decoded document field by field (the same way for both
// formats), so that an error names the store and the field in the words of
// the file, never a Go type.
func build(doc any) (*Config, error) {
	top, err := fields(doc, "the document", "cosid", "stores")
	if err != nil {
		return nil, err
	}
	stores, ok := top["stores"]
	if cosid, nested := top["cosid"]; nested {
		if ok {
			return nil, errors.New(`config: both "cosid.stores" and "stores" are given; use one`)
		}
		inner, err := fields(cosid, `"cosid"`, "stores")
		if err != nil {
			return nil, err
		}
		stores = inner["stores"]
	}
	named, isMap := stores.(map[string]any)
	if !isMap || len(named) == 0 {
		return nil, errors.New("config: no stores (expected cosid.stores or stores: a mapping of store names)")
	}
	c := &Config{Stores: map[string]StoreConfig{}}
	for _, name := range slices.Sorted(maps.Keys(named)) {
		sc, err := buildStore(name, named[name])
		if err != nil {
			return nil, err
		}
		c.Stores[name] = sc
	}
	return c, nil
}

func buildStore(name string, v any) (StoreConfig, error) {
	sc := StoreConfig{Options: map[string]string{}}
	if name == "" {
		return sc, errors.New("config: a store has an empty name")
	}
	where := fmt.Sprintf("store %q", name)
	f, err := fields(v, where, "type", "timeout", "options")
	if err != nil {
		return sc, err
	}
	switch typ, ok := f["type"].(string); {
	case f["type"] == nil:
		return sc, fmt.Errorf("config: %s: type is missing (a driver name such as zookeeper)", where)
	case !ok || typ == "":
		return sc, fmt.Errorf("config: %s: type %s is not a driver name (such as zookeeper)", where, shown(f["type"]))
	default:
		sc.Type = typ
	}
	if t, ok := f["timeout"]; ok {
		d, err := duration(t)
		if err != nil {
			return sc, fmt.Errorf("config: %s: timeout %v", where, err)
		}
		sc.Timeout = d
	}
	if o, ok := f["options"]; ok && o != nil {
		opts, isMap := o.(map[string]any)
		if !isMap {
			return sc, fmt.Errorf("config: %s: options must be a mapping of option names, not %s", where, shown(o))
		}
		if err := flatten("", opts, sc.Options); err != nil {
			return sc, fmt.Errorf("config: %s: %w", where, err)
		}
	}
	return sc, nil
}

// fields returns v as a mapping whose keys are all among known.
func fields(v any, where string, known ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("config: %s must be a mapping with the fields %s", where, strings.Join(known, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("config: %s: unknown field %q (known: %s)", where, k, strings.Join(known, ", "))
		}
	}
	return m, nil
}

// MaxTimeout bounds a store's timeout.
const MaxTimeout = 24 * time.Hour

// duration reads a timeout as the drivers read a duration option: "3s"
// or a bare integer of milliseconds, within [1ms, MaxTimeout]. Its error
// quotes the value and gives the reason.
func duration(v any) (time.Duration, error) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case int:
		s = strconv.Itoa(v)
	case uint64:
		s = strconv.FormatUint(v, 10)
	case json.Number:
		s = v.String()
	default:
		return 0, fmt.Errorf("%s: not a duration (e.g. 500ms, 3s)", shown(v))
	}
	d, err := driver.ParseDuration(s, time.Millisecond, MaxTimeout)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", s, err)
	}
	return d, nil
}

func flatten(prefix string, in map[string]any, out map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(in)) {
		key := prefix + k
		if m, ok := in[k].(map[string]any); ok {
			if err := flatten(key+".", m, out); err != nil {
				return err
			}
			continue
		}
		if _, dup := out[key]; dup {
			return fmt.Errorf("option %q is given twice (nested and dotted)", key)
		}
		switch v := in[k].(type) {
		case string:
			out[key] = v
		case bool:
			out[key] = strconv.FormatBool(v)
		case int:
			out[key] = strconv.Itoa(v)
		case uint64:
			out[key] = strconv.FormatUint(v, 10)
		case float64:
			out[key] = strconv.FormatFloat(v, 'f', -1, 64)
		case json.Number:
			out[key] = v.String()
		case nil:
			return fmt.Errorf("option %q has no value", key)
		case []any:
			// Values are never shown: one may be a secret (auth).
			return fmt.Errorf("option %q: a list is not a string, number or boolean", key)
		default:
			return fmt.Errorf("option %q: a value of type %T is not a string, number or boolean", key, v)
		}
	}
	return nil
}

// shown is a value in the words of the file: a scalar quoted, anything
// else by its kind, never in Go's syntax.
func shown(v any) string {
	switch v.(type) {
	case nil:
		return "with no value"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	}
	return strconv.Quote(fmt.Sprint(v))
}
