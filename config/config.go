// Package config loads a set of named stores from YAML or JSON and opens
// them in one call. The shape is the one of the project's seed design:
//
//	cosid:
//	  stores:
//	    zk:
//	      type: zookeeper
//	      timeout: 3s
//	      options:
//	        connectString: zk-1:2181,zk-2:2181
//
// The "cosid:" level is optional: a document may start at "stores:". Nested
// option maps are flattened with dots (retry: {maxRetries: 5} is
// retry.maxRetries=5), and scalar values become strings for the driver to
// parse. Unknown fields are errors, never ignored.
//
// It is a package of its own so that the YAML library stays out of the
// imports of package store.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"
	"go.yaml.in/yaml/v3"

	"github.com/cosid-go/store"
)

// StoreConfig is one named store.
type StoreConfig struct {
	Type    string            // the registered driver name
	Timeout time.Duration     // zero: store.DefaultTimeout
	Options map[string]string // the driver's options
}

// Config is a set of named stores.
type Config struct {
	Stores map[string]StoreConfig
}

// raw mirrors the document; options and timeout are decoded loosely and
// checked by hand so errors can name the store and the field.
type raw struct {
	Cosid  *rawStores          `yaml:"cosid" json:"cosid"`
	Stores map[string]rawStore `yaml:"stores" json:"stores"`
}

type rawStores struct {
	Stores map[string]rawStore `yaml:"stores" json:"stores"`
}

type rawStore struct {
	Type    string         `yaml:"type" json:"type"`
	Timeout any            `yaml:"timeout" json:"timeout"`
	Options map[string]any `yaml:"options" json:"options"`
}

// ParseYAML parses a YAML document.
func ParseYAML(data []byte) (*Config, error) {
	var r raw
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("config: yaml: %w", err)
	}
	return r.build()
}

// ParseJSON parses a JSON document.
func ParseJSON(data []byte) (*Config, error) {
	var r raw
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("config: json: %w", err)
	}
	return r.build()
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

func (r raw) build() (*Config, error) {
	stores := r.Stores
	if r.Cosid != nil {
		if stores != nil {
			return nil, errors.New(`config: both "cosid.stores" and "stores" are given; use one`)
		}
		stores = r.Cosid.Stores
	}
	if len(stores) == 0 {
		return nil, errors.New("config: no stores (expected cosid.stores or stores)")
	}
	c := &Config{Stores: map[string]StoreConfig{}}
	for name, rs := range stores {
		sc, err := rs.build(name)
		if err != nil {
			return nil, err
		}
		c.Stores[name] = sc
	}
	return c, nil
}

func (rs rawStore) build(name string) (StoreConfig, error) {
	sc := StoreConfig{Type: rs.Type, Options: map[string]string{}}
	if name == "" {
		return sc, errors.New("config: a store has an empty name")
	}
	if rs.Type == "" {
		return sc, fmt.Errorf("config: store %q: type is missing", name)
	}
	if rs.Timeout != nil {
		d, err := duration(rs.Timeout)
		if err != nil || d <= 0 {
			return sc, fmt.Errorf("config: store %q: timeout %v: want a positive duration such as 3s", name, rs.Timeout)
		}
		sc.Timeout = d
	}
	if err := flatten("", rs.Options, sc.Options); err != nil {
		return sc, fmt.Errorf("config: store %q: %w", name, err)
	}
	return sc, nil
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
	for k, v := range in {
		key := prefix + k
		switch v := v.(type) {
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
		default:
			return fmt.Errorf("option %q: %v is not a string, number or boolean", key, v)
		}
	}
	return nil
}

// Stores are opened stores by name.
type Stores map[string]*store.Store

// Close closes every store and reports every error.
func (s Stores) Close() error {
	var errs *multierror.Error
	for _, name := range s.names() {
		if err := s[name].Close(); err != nil {
			errs = multierror.Append(errs, fmt.Errorf("close %q: %w", name, err))
		}
	}
	return errs.ErrorOrNil()
}

func (s Stores) names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens every store. If any fails, it closes those it opened and
// returns every error (opening and closing), each naming its store.
func (c *Config) Open(opts ...store.Option) (Stores, error) {
	names := make([]string, 0, len(c.Stores))
	for n := range c.Stores {
		names = append(names, n)
	}
	sort.Strings(names)
	opened := Stores{}
	var errs *multierror.Error
	for _, name := range names {
		sc := c.Stores[name]
		o := opts
		if sc.Timeout > 0 {
			o = append(append([]store.Option(nil), opts...), store.WithTimeout(sc.Timeout))
		}
		st, err := store.Open(sc.Type, sc.Options, o...)
		if err != nil {
			errs = multierror.Append(errs, fmt.Errorf("open %q: %w", name, err))
			continue
		}
		opened[name] = st
	}
	if errs != nil {
		if err := opened.Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
		return nil, fmt.Errorf("config: %w", errs)
	}
	return opened, nil
}

// OpenFile loads a file and opens every store in it.
func OpenFile(path string, opts ...store.Option) (Stores, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	return c.Open(opts...)
}
