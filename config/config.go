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
// parse. A timeout is a duration such as 3s, or a number of milliseconds,
// from 1ms to MaxTimeout.
//
// YAML and JSON follow the same rules, with the same messages: unknown
// fields are errors, never ignored; a key given twice in one mapping (a
// YAML merge key gives its keys), an option given both nested and dotted,
// and anything after the document are refused, since the last spelling
// winning silently can put a store on another file or server.
//
// It is a package of its own so that the YAML library stays out of the
// imports of package store.
package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"

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

// Stores are opened stores by name.
type Stores map[string]*store.Store

// Close closes every store and reports every error.
func (s Stores) Close() error {
	errs := &multierror.Error{ErrorFormat: oneLine}
	for _, name := range s.names() {
		if err := s[name].Close(); err != nil {
			errs = multierror.Append(errs, fmt.Errorf("closing store %q: %w", name, err))
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
	errs := &multierror.Error{ErrorFormat: oneLine}
	for _, name := range names {
		sc := c.Stores[name]
		o := opts
		if sc.Timeout > 0 {
			o = append(append([]store.Option(nil), opts...), store.WithTimeout(sc.Timeout))
		}
		st, err := store.Open(sc.Type, sc.Options, o...)
		if err != nil {
			errs = multierror.Append(errs, openError(name, err))
			continue
		}
		opened[name] = st
	}
	if errs.Len() > 0 {
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

// openError names the store of the file; the driver's own words follow,
// without the store package's "Open" that the file never mentions.
func openError(name string, err error) error {
	if se, ok := errors.AsType[*store.Error](err); ok && se.Op == "Open" {
		return fmt.Errorf("store %q (type %s): %w", name, se.Key, se.Err)
	}
	return fmt.Errorf("store %q: %w", name, err)
}

// oneLine prints gathered errors on one line, each naming its store, where
// go-multierror's default is a bulleted block that breaks log lines.
func oneLine(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	if len(errs) == 1 {
		return msgs[0]
	}
	return fmt.Sprintf("%d errors: %s", len(errs), strings.Join(msgs, "; "))
}
