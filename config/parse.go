package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ParseYAML parses a YAML document.
func ParseYAML(data []byte) (*Config, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The library's own "yaml: " prefix would follow ours.
		return nil, fmt.Errorf("config: YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return build(doc)
}

// ParseJSON parses a JSON document.
func ParseJSON(data []byte) (*Config, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			return nil, fmt.Errorf("config: JSON: %v (at byte %d)", err, se.Offset)
		}
		return nil, fmt.Errorf("config: JSON: %v", err)
	}
	return build(doc)
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
		return sc, fmt.Errorf("config: %s: type %v is not a driver name (such as zookeeper)", where, f["type"])
	default:
		sc.Type = typ
	}
	if t, ok := f["timeout"]; ok {
		d, err := duration(t)
		if err != nil || d <= 0 {
			return sc, fmt.Errorf("config: %s: timeout %v: want a positive duration such as 3s", where, t)
		}
		sc.Timeout = d
	}
	if o, ok := f["options"]; ok && o != nil {
		opts, isMap := o.(map[string]any)
		if !isMap {
			return sc, fmt.Errorf("config: %s: options must be a mapping of option names, not %v", where, o)
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

// duration accepts "3s"-style strings and bare numbers of milliseconds.
func duration(v any) (time.Duration, error) {
	switch v := v.(type) {
	case string:
		return time.ParseDuration(v)
	case int:
		return time.Duration(v) * time.Millisecond, nil
	case json.Number:
		n, err := v.Int64()
		return time.Duration(n) * time.Millisecond, err
	}
	return 0, fmt.Errorf("not a duration: %v", v)
}

func flatten(prefix string, in map[string]any, out map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(in)) {
		key := prefix + k
		switch v := in[k].(type) {
		case map[string]any:
			if err := flatten(key+".", v, out); err != nil {
				return err
			}
			continue
		case string:
			out[key] = v
		case bool:
			out[key] = strconv.FormatBool(v)
		case int:
			out[key] = strconv.Itoa(v)
		case float64:
			out[key] = strconv.FormatFloat(v, 'f', -1, 64)
		case json.Number:
			out[key] = v.String()
		case []any:
			// Values are never shown: one may be a secret (auth).
			return fmt.Errorf("option %q: a list is not a string, number or boolean", key)
		default:
			return fmt.Errorf("option %q: a value of type %T is not a string, number or boolean", key, v)
		}
	}
	return nil
}
